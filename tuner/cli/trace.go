// tune trace: where an operation's time went, from a step timeline.

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/lib/tef"
	"github.com/gccl/gccl/plots"
	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tracestat"
)

// exitInvalid is tune trace's exit code for a trace that breaks the
// format's rules (without --no-validate).
const exitInvalid = 1

// maxPathRows is how many links of a critical path the text prints whole;
// a longer path prints its first and last links (--json has them all).
const maxPathRows = 40

// traceCmd is `tune trace [flags] FILE...`: reads step timelines in
// gccl's Trace Event Format (lib/tef; several files of one run are
// merged), validates them, and prints where the time went (package
// tracestat); --plot draws one operation's timeline.
func traceCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune trace", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	op := fs.Int64("op", -1, "seq of the operation whose critical path to walk and timeline to draw (-1: the slowest operation)")
	top := fs.Int("top", 10, "how many of the longest waits (and of the slowest operations) to list")
	jsonOut := fs.Bool("json", false, "print the summary as one JSON object, for machines, instead of tables")
	plotOut := fs.String("plot", "", "draw the operation's timeline (see --op) to this image: .png, .svg or .pdf by its extension (default: no plot)")
	title := fs.String("title", "", "the plot's title (default: the operation, its ranks and time)")
	size := fs.String("size", "10x6", "plot size WIDTHxHEIGHT, in inches or with a unit: cm, mm, pt, px")
	dpi := fs.Int("dpi", plots.DefaultPage.DPI, "plot PNG resolution, dots per inch")
	force := fs.Bool("force", false, "overwrite the --plot file if it exists")
	noValidate := fs.Bool("no-validate", false, "read traces that break the format's rules instead of listing the problems and exiting 1")
	setUsage(fs, stderr, "tune trace [flags] FILE...",
		"Reads step timelines (Trace Event Format, as perf --trace-steps and gccl's NCCL profiler\n"+
			"plugin write them; one file per process of a run is merged) and prints per track the busy\n"+
			"and waiting time, the longest waits and on whom, each operation's straggler rank and the\n"+
			"critical path of one operation; --plot draws that operation's timeline.\n"+
			"Exit 0, 1 when a trace breaks the format's rules, 2 on bad input.\n\n"+
			"example: tune trace --op 12 --plot op12.png trace.json.0 trace.json.1")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune trace: "+format+"\n", a...)
		return exitBad
	}
	if fs.NArg() == 0 {
		return bad("no trace files (give the JSON files perf --trace-steps or the NCCL profiler plugin wrote)")
	}
	if *top < 0 {
		return bad("invalid --top %d: want 0 or more", *top)
	}
	if *op < -1 {
		return bad("invalid --op %d: want an operation's seq (0 or more), or -1 for the slowest", *op)
	}
	var page plots.Page
	var format string
	if *plotOut != "" {
		var err error
		if format, err = plots.FormatOf(*plotOut); err != nil {
			return bad("invalid --plot: %v", err)
		}
		if err := plots.CheckDPI(*dpi); err != nil {
			return bad("invalid --dpi: %v", err)
		}
		page.DPI = *dpi
		if page.Width, page.Height, err = plots.ParseSize(*size, *dpi); err != nil {
			return bad("invalid --size: %v", err)
		}
	}
	merged, err := readTraces(fs.Args())
	if err != nil {
		return bad("%v", err)
	}
	if errs := tef.Validate(merged); len(errs) > 0 && !*noValidate {
		fmt.Fprintf(stderr, "tune trace: the trace breaks the Trace Event Format's rules (--no-validate reads it anyway):\n")
		for _, e := range errs {
			fmt.Fprintf(stderr, "  %v\n", e)
		}
		return exitInvalid
	}
	tr, err := tracestat.FromEvents(merged.TraceEvents)
	if err != nil {
		return bad("%v", err)
	}
	sum, err := tr.Summarize(tracestat.Options{Op: *op, Top: *top})
	if err != nil {
		return bad("invalid --op: %v", err)
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Files []string `json:"files"`
			*tracestat.Summary
		}{fs.Args(), sum}); err != nil {
			return bad("%v", err)
		}
	} else {
		printTrace(stdout, fs.Args(), sum, *top)
	}
	if *plotOut == "" {
		return exitOK
	}
	if sum.Path == nil {
		return bad("--plot: the trace has no operation to draw")
	}
	tl, err := timelineOf(tr, sum, *title)
	if err != nil {
		return bad("--plot: %v", err)
	}
	fig, err := plots.TimelineFigure(tl)
	if err != nil {
		return bad("--plot: %v", err)
	}
	create := results.Create
	if *force {
		create = results.CreateForce
	}
	f, err := create(*plotOut)
	if err == nil {
		err = settle(f, plots.Write(f, format, fig, page))
	}
	if err != nil {
		return bad("writing %s: %v", *plotOut, err)
	}
	what := strings.ToUpper(format)
	if format == "png" {
		w, h := page.Pixels()
		what = fmt.Sprintf("%dx%d PNG", w, h)
	}
	msg := stdout
	if *jsonOut {
		msg = stderr // stdout is the JSON alone
	}
	fmt.Fprintf(msg, "wrote %s (%s, timeline of seq %d)\n", *plotOut, what, sum.Path.Seq)
	return exitOK
}

// readTraces reads and merges the files (one per process of a run).
func readTraces(paths []string) (*tef.File, error) {
	files := make([]*tef.File, 0, len(paths))
	for _, p := range paths {
		f, err := tef.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 1 {
		return files[0], nil
	}
	return tef.Merge(files)
}

// us writes microseconds for a table.
func us(v float64) string { return fmt.Sprintf("%.3f", v) }

func newTable(w io.Writer, title string) table.Writer {
	t := table.NewWriter()
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	t.SetTitle(title)
	return t
}

// orUnknown writes "" as unknown, a peer -1 as "-".
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func peerString(p int) string {
	if p < 0 {
		return "-"
	}
	return fmt.Sprint(p)
}

func rankString(r int) string {
	if r < 0 {
		return "none"
	}
	return fmt.Sprint(r)
}

// printTrace prints the summary as tables.
func printTrace(w io.Writer, files []string, s *tracestat.Summary, top int) {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	fmt.Fprintf(w, "trace %s: %d ranks, %d operations, %d spans\n", strings.Join(names, " + "), s.Ranks, len(s.Ops), s.Events)
	for what, n := range s.Skipped {
		fmt.Fprintf(w, "note: %d events of %s left out (tune trace reads categories op, step, wait, kernel, proxy, group)\n", n, what)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	printOps(w, s, top)
	printTracks(w, s)
	printWaits(w, s, top)
	printStragglers(w, s)
	if s.Path != nil {
		printPath(w, s)
	}
}

// printOps lists the operations (the top slowest when there are more)
// with their stragglers.
func printOps(w io.Writer, s *tracestat.Summary, top int) {
	if len(s.Ops) == 0 {
		return
	}
	strag := map[int64]tracestat.OpStraggler{}
	for _, st := range s.Stragglers {
		strag[st.Seq] = st
	}
	ops := append([]tracestat.Op(nil), s.Ops...)
	title := fmt.Sprintf("%d operations", len(ops))
	if len(ops) > max(top, 1) {
		sortSlowest(ops)
		ops = ops[:max(top, 1)]
		title = fmt.Sprintf("the %d slowest of %d operations", len(ops), len(s.Ops))
	}
	fmt.Fprintf(w, "%s: last to start (how late after the first), most waited on (wait time naming it as peer)\n", title)
	t := newTable(w, "")
	t.AppendHeader(table.Row{"seq", "op", "bytes", "algo/proto", "ch", "ranks", "time us", "last to start", "late us", "most waited on", "waited us"})
	for _, o := range ops {
		st := strag[o.Seq]
		bytes := "unknown"
		if o.Bytes >= 0 {
			bytes = results.SizeLabel(o.Bytes)
		}
		ch := "?"
		if o.Channels > 0 {
			ch = fmt.Sprint(o.Channels)
		}
		t.AppendRow(table.Row{o.Seq, o.Name, bytes, orUnknown(o.Algo) + "/" + orUnknown(o.Proto), ch, len(o.Ranks), us(o.Dur()),
			rankString(st.Last), us(st.Late), rankString(st.WaitedOn), us(st.WaitedOnUs)})
	}
	t.Render()
}

// sortSlowest orders operations by time, longest first (then by seq).
func sortSlowest(ops []tracestat.Op) {
	for i := 1; i < len(ops); i++ {
		for j := i; j > 0 && (ops[j].Dur() > ops[j-1].Dur() || (ops[j].Dur() == ops[j-1].Dur() && ops[j].Seq < ops[j-1].Seq)); j-- {
			ops[j], ops[j-1] = ops[j-1], ops[j]
		}
	}
}

func printTracks(w io.Writer, s *tracestat.Summary) {
	if len(s.Tracks) > 0 {
		fmt.Fprintln(w, "per track, over the whole trace: active = its operations' time; busy = in steps outside waits; util = busy / active")
		t := newTable(w, "")
		t.AppendHeader(table.Row{"rank", "track", "active us", "busy us", "wait us", "util", "steps", "waits"})
		for _, x := range s.Tracks {
			util := "-" // no steps traced on the track
			if x.Steps > 0 {
				util = fmt.Sprintf("%.0f%%", 100*x.Util)
			}
			t.AppendRow(table.Row{x.Rank, x.Label, us(x.Active), us(x.Busy), us(x.Wait), util, x.Steps, x.Waits})
		}
		t.Render()
	}
	if len(s.PerRank) > 0 {
		fmt.Fprintln(w, "per rank: op = the rank's operations' time; active, busy and wait summed over its tracks")
		t := newTable(w, "")
		t.AppendHeader(table.Row{"rank", "tracks", "op us", "active us", "busy us", "wait us", "util"})
		for _, r := range s.PerRank {
			t.AppendRow(table.Row{r.Rank, r.Tracks, us(r.Op), us(r.Active), us(r.Busy), us(r.Wait), fmt.Sprintf("%.0f%%", 100*r.Util)})
		}
		t.Render()
	}
}

func printWaits(w io.Writer, s *tracestat.Summary, top int) {
	if len(s.Waits) == 0 {
		fmt.Fprintln(w, "no waits traced")
		return
	}
	fmt.Fprintf(w, "the %d longest waits (on rank: the peer it waits on, - when none or several)\n", len(s.Waits))
	t := newTable(w, "")
	t.AppendHeader(table.Row{"wait us", "rank", "track", "seq", "op", "step", "on rank", "on", "what", "start us"})
	for _, x := range s.Waits {
		step := x.Step
		if step == "" {
			step = "(none)"
		}
		t.AppendRow(table.Row{us(x.Dur), x.Rank, x.Track, x.Seq, x.Op, step, peerString(x.Peer), orUnknown(x.On), x.What, us(x.Start)})
	}
	t.Render()
}

// printStragglers prints the per-rank sums and says which rank held the
// run up most.
func printStragglers(w io.Writer, s *tracestat.Summary) {
	if len(s.Blame) < 2 {
		return
	}
	fmt.Fprintf(w, "stragglers over %d operations: who started last, and whom the others waited on\n", len(s.Stragglers))
	t := newTable(w, "")
	t.AppendHeader(table.Row{"rank", "started last (ops)", "late us", "most waited on (ops)", "waited on us"})
	worst := s.Blame[0]
	for _, b := range s.Blame {
		t.AppendRow(table.Row{b.Rank, b.LastArrivals, us(b.LateUs), b.MostWaitedOn, us(b.WaitedOnUs)})
		if b.WaitedOnUs+b.LateUs > worst.WaitedOnUs+worst.LateUs {
			worst = b
		}
	}
	t.Render()
	if worst.WaitedOnUs+worst.LateUs == 0 {
		fmt.Fprintln(w, "straggler: none (no rank started late, no wait names a peer)")
		return
	}
	fmt.Fprintf(w, "straggler: rank %d: the others waited on it %s us", worst.Rank, us(worst.WaitedOnUs))
	if worst.LastArrivals > 0 {
		fmt.Fprintf(w, "; it started last in %d of %d operations, %s us late in all", worst.LastArrivals, len(s.Stragglers), us(worst.LateUs))
	}
	fmt.Fprintln(w)
}

// printPath prints the critical path: a per-rank account, then its links
// (the first and last of a long one).
func printPath(w io.Writer, s *tracestat.Summary) {
	p := s.Path
	which := "chosen with --op"
	if slow, ok := slowest(s.Ops); ok && slow == p.Seq {
		which = "the slowest"
	}
	fmt.Fprintf(w, "critical path of seq %d (%s, %s us, %s): %s, explains %.0f%% of its time (%s us)\n",
		p.Seq, p.Op, us(p.End-p.Start), which, links(len(p.Links)), 100*p.Frac, us(p.Explained))
	type acc struct{ work, wait, late float64 }
	by := map[int]*acc{}
	var ranks []int
	var unexplained float64
	for _, l := range p.Links {
		if by[l.Rank] == nil {
			by[l.Rank] = &acc{}
			ranks = append(ranks, l.Rank)
		}
		switch {
		case l.Kind == tracestat.LinkWork:
			by[l.Rank].work += l.Dur
		case l.Kind == tracestat.LinkLate:
			by[l.Rank].late += l.Dur
		case l.Explained:
			by[l.Rank].wait += l.Dur
		default:
			unexplained += l.Dur
		}
	}
	fmt.Fprintln(w, "its time per rank: work = running its steps; signal = waiting after the peer's step ended; late = not yet in the operation")
	t := newTable(w, "")
	t.AppendHeader(table.Row{"rank", "work us", "signal us", "late us"})
	for _, r := range ranks {
		a := by[r]
		t.AppendRow(table.Row{r, us(a.work), us(a.wait), us(a.late)})
	}
	t.Render()
	if unexplained > 0 {
		fmt.Fprintf(w, "unexplained: %s us (waits on no peer, or on a peer with no step before)\n", us(unexplained))
	}
	fmt.Fprintln(w, "the path, in time order (start: us from the operation's start)")
	t = newTable(w, "")
	t.AppendHeader(table.Row{"#", "rank", "track", "link", "what", "start us", "dur us"})
	for i, l := range p.Links {
		if len(p.Links) > maxPathRows && i == maxPathRows/2 {
			t.AppendRow(table.Row{"...", "", "", "", fmt.Sprintf("%d links left out (--json lists them)", len(p.Links)-maxPathRows), "", ""})
		}
		if len(p.Links) > maxPathRows && i >= maxPathRows/2 && i < len(p.Links)-maxPathRows/2 {
			continue
		}
		what := l.Name
		kind := l.Kind
		if l.Kind == tracestat.LinkWait {
			what = fmt.Sprintf("%s on rank %s (%s)", l.Name, peerString(l.Peer), orUnknown(l.On))
			if !l.Explained {
				kind = "wait, not followed"
			}
		}
		t.AppendRow(table.Row{i + 1, l.Rank, l.Track, kind, what, us(l.Start - p.Start), us(l.Dur)})
	}
	t.Render()
}

func links(n int) string {
	if n == 1 {
		return "1 link"
	}
	return fmt.Sprintf("%d links", n)
}

// slowest is the seq of the longest operation.
func slowest(ops []tracestat.Op) (int64, bool) {
	if len(ops) == 0 {
		return 0, false
	}
	o := append([]tracestat.Op(nil), ops...)
	sortSlowest(o)
	return o[0].Seq, true
}

// timelineOf lays out the path's operation as a timeline: one row per
// track, its spans, steps and waits, the critical path under them; times
// from the operation's first start.
func timelineOf(tr *tracestat.Trace, s *tracestat.Summary, title string) (plots.Timeline, error) {
	p := s.Path
	rows, err := tr.Timeline(p.Seq)
	if err != nil {
		return plots.Timeline{}, err
	}
	var op tracestat.Op
	for _, o := range s.Ops {
		if o.Seq == p.Seq {
			op = o
		}
	}
	tl := plots.Timeline{Title: title}
	if tl.Title == "" {
		tl.Title = fmt.Sprintf("%s seq %d: %d ranks, %.4g us", op.Name, op.Seq, len(op.Ranks), op.Dur())
	}
	var sub []string
	if op.Bytes >= 0 {
		sub = append(sub, results.SizeLabel(op.Bytes))
	}
	if op.Algo != "" || op.Proto != "" {
		sub = append(sub, orUnknown(op.Algo)+"/"+orUnknown(op.Proto))
	}
	if op.Channels > 0 {
		sub = append(sub, fmt.Sprintf("%d channels", op.Channels))
	}
	sub = append(sub, fmt.Sprintf("critical path (black) explains %.0f%%", 100*p.Frac))
	tl.Subtitle = strings.Join(sub, ", ")
	rowOf := map[tef.Track]int{}
	firstRow := map[int]int{}
	for i, r := range rows {
		rowOf[tef.Track{Pid: r.Rank, Tid: r.Tid}] = i
		if _, ok := firstRow[r.Rank]; !ok {
			firstRow[r.Rank] = i
		}
		row := plots.TimelineRow{Label: r.Label}
		for _, sp := range r.Spans {
			b := plots.TimelineBar{Start: sp.Start - op.Start, End: sp.End - op.Start, Kind: sp.Name}
			switch sp.Cat {
			case tef.CatStep:
				b.Layer = plots.LayerStep
			case tef.CatWait:
				b.Layer = plots.LayerWait
			case tef.CatGroup:
				continue
			default:
				b.Layer = plots.LayerSpan
			}
			row.Bars = append(row.Bars, b)
		}
		tl.Rows = append(tl.Rows, row)
	}
	for _, l := range p.Links {
		if l.Kind == tracestat.LinkWait && l.Explained {
			continue // the line from the peer's row to the waiter's
		}
		row, ok := rowOf[tef.Track{Pid: l.Rank, Tid: l.Tid}]
		if !ok {
			if row, ok = firstRow[l.Rank]; !ok {
				continue
			}
		}
		tl.Path = append(tl.Path, plots.TimelineMark{Row: row, Start: l.Start - op.Start, End: l.Start + l.Dur - op.Start})
	}
	return tl, nil
}
