package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/gccl/gccl/changepoint"
	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/history"
	"github.com/gccl/gccl/results"
)

// historyJudge is `tune gate --history DB`: each key of one candidate run
// against its series in the history, not against one baseline run. The
// series' change points split it into segments; the newest segment's
// median is what the candidate should measure if nothing changed, and the
// spread of every segment around its median is the key's noise. A key
// regresses when the candidate is worse than that level by at least z
// noise units (conbench's z-score test, z = 5 by default) and by more than
// the floor.
type historyJudge struct {
	db     string
	filter history.Filter
	metric ci.Metric
	norm   ci.Normalization
	stat   ci.Stat // what a run's value is (ci.StatAuto: per key)
	z      float64 // noise units a regression needs
	floor  float64 // and a relative change beyond this
}

// historyVerdict is one key's outcome.
type historyVerdict struct {
	Key       string  `json:"key"`
	Stat      string  `json:"stat"`  // what a run's value is: median or min
	Runs      int     `json:"runs"`  // the series' runs
	Level     float64 `json:"level"` // the newest segment's median; NaN with too few runs
	Candidate float64 `json:"candidate"`
	Change    float64 `json:"change"` // candidate/level - 1
	Noise     float64 `json:"noise"`  // one run's relative spread
	Z         float64 `json:"z"`      // noise units worse (negative: better)
	Verdict   string  `json:"verdict"`
}

// minHistory is the fewest runs a key's series needs to be judged.
const minHistory = 2 * changepoint.DefaultMinSize

// judge compares candidate records with the history's series.
func (h historyJudge) judge(s *history.Store, cand []results.Record) ([]historyVerdict, error) {
	vals := map[ci.Key][]float64{}
	iters := map[ci.Key][]float64{} // the candidate's per-iteration values, pooled
	fastest := map[ci.Key]float64{} // its fastest iteration
	lacks := map[ci.Key]map[ci.Stat]bool{}
	hib := h.metric.HigherIsBetter()
	for _, r := range cand {
		v, it, ok := ci.ValueOf(r, h.metric, h.norm)
		if !ok {
			continue
		}
		k := ci.KeyOf(r)
		if lacks[k] == nil {
			lacks[k] = map[ci.Stat]bool{}
		}
		vals[k] = append(vals[k], v)
		if it == nil {
			lacks[k][ci.StatLow] = true
		}
		iters[k] = append(iters[k], it...)
		f, ok := ci.FastestOf(r, h.metric, h.norm)
		switch {
		case !ok:
			lacks[k][ci.StatFastest] = true
		case fastest[k] == 0 || hib == (f > fastest[k]):
			fastest[k] = f
		}
	}
	if len(vals) == 0 {
		return nil, fmt.Errorf("the candidate has no record with a %s%s", h.metric, normNeeds(h.norm))
	}
	keys := make([]ci.Key, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ci.Key) int { return a.Compare(b) })
	stats := []ci.Stat{h.stat}
	if h.stat == ci.StatAuto {
		stats = ci.Stats
	}
	var out []historyVerdict
	for _, k := range keys {
		v := historyVerdict{Key: k.String(), Stat: ci.StatMedian.String(), Candidate: medianOf(vals[k]), Level: math.NaN(), Change: math.NaN(), Noise: math.NaN(), Z: math.NaN()}
		pts, err := s.Series(k, h.metric, h.norm, h.filter)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		v.Runs = len(pts)
		if len(pts) < minHistory {
			v.Verdict = fmt.Sprintf("no history (%d of %d runs)", len(pts), minHistory)
			out = append(out, v)
			continue
		}
		// the series and the candidate in each stat both give; the
		// quietest series is judged
		var series []float64
		bestNoise := math.Inf(1)
		for _, st := range stats {
			c, ok := v.Candidate, true
			switch st {
			case ci.StatFastest:
				c, ok = fastest[k], !lacks[k][st]
			case ci.StatLow:
				slices.Sort(iters[k])
				c, ok = ci.LowOf(iters[k], h.metric)
				ok = ok && !lacks[k][st]
			}
			sp := statSeries(pts, st, h.metric)
			if !ok || sp == nil {
				continue
			}
			sv := values(sp)
			n, err := changepoint.RunNoise(sv)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if series == nil || n < bestNoise {
				series, bestNoise, v.Candidate, v.Stat = sv, n, c, st.String()
			}
		}
		if series == nil {
			v.Verdict = fmt.Sprintf(noStatVerdict, h.stat)
			out = append(out, v)
			continue
		}
		cps, err := changepoint.Detect(series, changepoint.Options{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		noise, err := changepoint.EstimateNoise(series, cps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		v.Level, v.Noise, v.Z = noise.Level, noise.Rel, noise.Z(v.Candidate, hib)
		v.Change = v.Candidate/noise.Level - 1
		worse := v.Change
		if hib {
			worse = -worse
		}
		switch {
		case v.Z >= h.z && worse > h.floor:
			v.Verdict = "REGRESSION"
		case -v.Z >= h.z && -worse > h.floor:
			v.Verdict = "improvement"
		default:
			v.Verdict = "ok"
		}
		out = append(out, v)
	}
	return out, nil
}

// noStatVerdict: under --stat min or p5, a key whose history or candidate
// cannot give that value (min_us or per-iteration samples missing: runs of
// an older gccl, nccl-tests text output).
const noStatVerdict = "no %s in the history or the candidate"

// runHistoryGate is tune gate's --history mode: exit 0 pass, 1 regression,
// 2 bad input.
func runHistoryGate(h historyJudge, candFiles []string, tags []string, jsonPath string, stdout, stderr io.Writer) int {
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune gate: "+format+"\n", a...)
		return ci.ExitBadInput
	}
	candRecs, err := readRecords(candFiles, tags)
	if err != nil {
		return bad("candidate: %v", err)
	}
	s := openHistory("tune gate", h.db, false, stderr)
	if s == nil {
		return ci.ExitBadInput
	}
	verdicts, err := h.judge(s, candRecs)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return bad("--history %s: %v", h.db, err)
	}
	noStat := fmt.Sprintf(noStatVerdict, h.stat)
	if !slices.ContainsFunc(verdicts, func(v historyVerdict) bool { return v.Verdict != noStat && !math.IsNaN(v.Level) }) &&
		slices.ContainsFunc(verdicts, func(v historyVerdict) bool { return v.Verdict == noStat }) {
		return bad("--stat %s: no key could be judged: %s; use --stat median or auto", h.stat, statMissing(h.stat))
	}
	regressions := 0
	t := table.NewWriter()
	t.SetOutputMirror(stdout)
	t.SetStyle(table.StyleLight)
	unit := ci.Unit(h.metric, h.norm)
	t.AppendHeader(table.Row{"key", "stat", "runs", "level " + unit, "candidate", "change", "noise", "z", "verdict"})
	for _, v := range verdicts {
		if v.Verdict == "REGRESSION" {
			regressions++
		}
		t.AppendRow(table.Row{v.Key, v.Stat, v.Runs, fmtNum(v.Level), fmtNum(v.Candidate), fmtPct(v.Change), fmtPct(v.Noise), fmtNum(v.Z), v.Verdict})
	}
	t.Render()
	word := "PASS"
	if regressions > 0 {
		word = "FAIL"
	}
	fmt.Fprintf(stdout, "%s: %d keys against %s's series (z >= %g and beyond %.1f%%), %d regressions\n", word, len(verdicts), h.db, h.z, 100*h.floor, regressions)
	if jsonPath != "" {
		err := writeFile(jsonPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			for _, v := range verdicts {
				if err := enc.Encode(jsonSafe(v)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return bad("%v", err)
		}
	}
	if regressions > 0 {
		return ci.ExitRegression
	}
	return ci.ExitPass
}

// jsonSafe replaces the NaNs JSON cannot hold (a key with no history) by 0.
func jsonSafe(v historyVerdict) historyVerdict {
	for _, f := range []*float64{&v.Level, &v.Change, &v.Noise, &v.Z} {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = 0
		}
	}
	return v
}

func fmtNum(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.4g", x)
}

func fmtPct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*x)
}
