// tune choices: the cost model's picks beside the fastest measured configs.

package cli

import (
	"fmt"
	"io"
	"math"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

func choices(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune choices", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "cost-model constants file (JSON, as GCCL_MODEL_FILE) (default: the built-in constants)")
	procs := fs.Int("procs", 0, "processors (cores) of the process that measured (default: the records' core count)")
	setUsage(fs, stderr, "tune choices [flags] FILES...",
		"Compares the cost model's pick at every measured size with the fastest measured\nconfiguration of sweeps of forced configurations.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "tune choices: no input files (give sweeps of forced configurations)")
		return exitBad
	}
	recs, pts, _, err := readPoints(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "tune choices: %v\n", err)
		return exitBad
	}
	p, _, err := recordsMachine(recs)
	if *procs > 0 {
		p, err = *procs, nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "tune choices: %v; give --procs\n", err)
		return exitBad
	}
	c := tuning.DefaultConstants()
	if *model != "" {
		if c, err = tuning.LoadConstants(*model); err != nil {
			fmt.Fprintf(stderr, "tune choices: %v\n", err)
			return exitBad
		}
	}
	rows := tuner.CompareChoices(c, p, pts)
	t := table.NewWriter()
	t.SetOutputMirror(stdout)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"coll", "ranks", "hosts", "bytes", "fastest measured", "us", "model pick", "predicted us", "measured us", "regret"})
	var logSum float64
	var n int
	worst := 0.0
	for _, r := range rows {
		regret := "n/a"
		if !math.IsNaN(r.ModelUs) {
			g := r.Regret()
			regret = fmt.Sprintf("%.0f%%", 100*g)
			logSum += math.Log1p(g)
			n++
			worst = max(worst, g)
		}
		t.AppendRow(table.Row{r.Coll, r.NRanks, r.NHosts, r.Bytes, cfgString(r.Best), fmt.Sprintf("%.1f", r.BestUs),
			cfgString(r.Model), fmt.Sprintf("%.1f", r.PredictedUs), fmt.Sprintf("%.1f", r.ModelUs), regret})
	}
	t.Render()
	writeSwitches(stdout, rows)
	rep := tuner.Evaluate(c, p, pts)
	fmt.Fprintf(stdout, "model picks: geomean regret %.1f%%, max %.0f%% over %d sizes\n", 100*(math.Exp(logSum/float64(max(n, 1)))-1), 100*worst, n)
	fmt.Fprintf(stdout, "model time vs measured over all %d points: median relative error %.1f%%, max %.0f%%\n", rep.Points, 100*rep.MedianRelErr, 100*rep.MaxRelErr)
	return exitOK
}

func cfgString(c tuner.Config) string { return fmt.Sprintf("%s/%s/%dch", c.Algo, c.Proto, c.NCh) }

// writeSwitches prints, per shape, the size ranges over which the model's
// pick and the fastest measured configuration stay the same: where each
// switches algorithm, protocol or channels.
func writeSwitches(w io.Writer, rows []tuner.ChoiceRow) {
	t := table.NewWriter()
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"coll", "ranks", "hosts", "model picks", "fastest measured"})
	for i := 0; i < len(rows); {
		j := i
		for j < len(rows) && rows[j].Coll == rows[i].Coll && rows[j].NRanks == rows[i].NRanks && rows[j].NHosts == rows[i].NHosts {
			j++
		}
		group := rows[i:j]
		model := segments(group, func(r tuner.ChoiceRow) string { return cfgString(r.Model) })
		best := segments(group, func(r tuner.ChoiceRow) string { return cfgString(r.Best) })
		t.AppendRow(table.Row{rows[i].Coll, rows[i].NRanks, rows[i].NHosts, model, best})
		i = j
	}
	t.Render()
}

// segments merges consecutive sizes with the same label into ranges, one
// per line: "8-512: Ring/LL/1ch".
func segments(rows []tuner.ChoiceRow, label func(tuner.ChoiceRow) string) string {
	var out string
	for i := 0; i < len(rows); {
		j := i
		for j+1 < len(rows) && label(rows[j+1]) == label(rows[i]) {
			j++
		}
		if out != "" {
			out += "\n"
		}
		out += fmt.Sprintf("%s-%s: %s", results.SizeLabel(rows[i].Bytes), results.SizeLabel(rows[j].Bytes), label(rows[i]))
		i = j + 1
	}
	return out
}
