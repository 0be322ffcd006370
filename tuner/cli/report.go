package cli

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/report"
	"github.com/gccl/gccl/results"
)

// reportCmd is `tune report --output FILE [flags] FILES...`: one HTML page
// (package report) of result files, each file one run, oldest first: the
// newest run's busBW curves, every key's series over the runs, and with
// --baseline the gate's table of the newest run against the baseline.
// The history's `tune report --db` builds the same page through
// buildReport, with the store's runs and the change points found in them.
func reportCmd(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("tune report", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	out := outputFlag(fs, "the HTML page to write, required")
	db := fs.String("db", "", "a history database (tune history add): every key's series over its runs, with their change points (default: the series of FILES)")
	title := fs.String("title", "", "the page's title (default: gccl performance report)")
	base := fs.StringArray("baseline", nil, "a baseline result file to gate the newest run against, the gate's table shown; one file per flag, repeat it for several (default: no gate)")
	thr := fs.String("threshold", "5%", "the gate's largest change in the worse direction that passes, percent or fraction, or size bands as tune gate takes them")
	norm := fs.String("normalize", "none", "copy: every busBW divided by its run's ref_copy_gbps, GB/s (series, curves and gate); none: as measured")
	stat := fs.String("stat", "auto", "with --db: a run's value of a key in the series: median, p5 (the 5th percentile of its iterations), min (its fastest iteration) or auto (per key, whichever has the least run-to-run noise), as tune history changes")
	charts := fs.Int("charts", report.DefaultCharts, "keys drawn in full, the others as sparklines in the table of keys; 0 draws none")
	force := fs.Bool("force", false, "overwrite the --output file if it exists")
	tags := tagFlag(fs)
	setUsage(fs, stderr, "tune report --output FILE [--db HISTORY] [flags] [FILES...]",
		"Writes one self-contained HTML page (no network, inline SVG charts): the newest run's busBW\ncurves, every key's series over the runs (with --db the history's, its change points marked;\nelse each FILE one run, oldest first), the gate's table with --baseline, and the machine and\ncommit metadata.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tune report: "+format+"\n", a...)
		return exitBad
	}
	if *out == "" {
		return bad("--output FILE is required: the HTML page to write")
	}
	if fs.NArg() == 0 && *db == "" {
		return bad("no result files and no --db (give the runs, oldest first: each file is one run; or a history)")
	}
	if *charts < 0 {
		return bad("--charts %d: want 0 (none drawn in full) or more", *charts)
	}
	opt := ci.DefaultOptions()
	var err error
	if opt.Normalize, err = ci.ParseNormalization(*norm); err != nil {
		return bad("--normalize: %v", err)
	}
	if opt.Thresholds, err = ci.ParseThresholds(*thr); err != nil {
		return bad("--threshold: %v", err)
	}
	seriesStat, err := ci.ParseStat(*stat)
	if err != nil {
		return bad("--stat: %v", err)
	}
	in := reportInput{Title: *title, Now: time.Now(), Normalize: opt.Normalize, Charts: *charts}
	if *charts == 0 {
		in.Charts = -1 // report.Page: 0 is the default, negative none
	}
	for _, arg := range fs.Args() {
		recs, err := readRecords([]string{arg}, *tags)
		if err != nil {
			return bad("%v", err)
		}
		file, _ := splitTags(arg)
		in.Runs = append(in.Runs, runOfFile(file, recs))
	}
	if *db != "" {
		st := openHistory("tune report", *db, false, stderr)
		if st == nil {
			return exitBad
		}
		kcs, err := findChanges(st, seriesSpec{metric: ci.BusBW, norm: opt.Normalize, stat: seriesStat})
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return bad("%s: %v", *db, err)
		}
		if len(kcs) == 0 {
			return bad("%s: no series (the history has no runs with a busBW%s)", *db, normNeeds(opt.Normalize))
		}
		in.Values, in.Changes = historyValues(kcs)
	}
	if len(*base) > 0 && len(in.Runs) == 0 {
		return bad("--baseline gates the newest of FILES: give the candidate's result files too")
	}
	if len(*base) > 0 {
		baseRecs, err := readRecords(*base, *tags)
		if err != nil {
			return bad("baseline: %v", err)
		}
		newest := in.Runs[len(in.Runs)-1]
		if in.Gate, err = ci.Compare(baseRecs, newest.Records, opt); err != nil {
			return bad("gate: %v", err)
		}
		in.GateBaseline, in.GateCandidate = strings.Join(*base, ", "), newest.Name
	}
	page, err := buildReport(in)
	if err != nil {
		return bad("%v", err)
	}
	if err := writeHTML(*out, *force, page); err != nil {
		return bad("writing %s: %v", *out, err)
	}
	fmt.Fprintf(stdout, "wrote %s: %d runs, %d keys, %d curve charts", *out, max(len(in.Runs), historyRuns(in.Values)), len(page.Series), len(page.Curves))
	if page.Gate != nil {
		word := "pass"
		if !page.Gate.Pass {
			word = "FAIL"
		}
		fmt.Fprintf(stdout, ", gate %s", word)
	}
	fmt.Fprintln(stdout)
	return exitOK
}

// historyValues turns a history's series and change points into the
// report's.
func historyValues(kcs []keyChanges) ([]keyValues, map[ci.Key][]report.ChangePoint) {
	values := make([]keyValues, 0, len(kcs))
	changes := map[ci.Key][]report.ChangePoint{}
	for _, kc := range kcs {
		kv := keyValues{Key: kc.Key, Stat: kc.Stat, Points: make([]report.RunPoint, len(kc.Points))}
		for i, p := range kc.Points {
			kv.Points[i] = report.RunPoint{Commit: p.Commit, Time: p.Time, Value: p.Value}
		}
		values = append(values, kv)
		for _, c := range kc.Changes {
			changes[kc.Key] = append(changes[kc.Key], report.ChangePoint{Index: c.Index, Before: c.Before, After: c.After, PValue: c.PValue})
		}
	}
	return values, changes
}

// historyRuns is the most runs any key's series has.
func historyRuns(values []keyValues) int {
	n := 0
	for _, kv := range values {
		n = max(n, len(kv.Points))
	}
	return n
}

// writeHTML writes the page whole or not at all (results.Create's
// temporary file and rename); an existing file only with force.
func writeHTML(path string, force bool, page report.Page) error {
	create := results.Create
	if force {
		create = results.CreateForce
	}
	f, err := create(path)
	if err != nil {
		return err
	}
	return settle(f, report.Write(f, page))
}

// reportRun is one run of a report: a result file, or a run of a
// history.
type reportRun struct {
	Name    string    // what the page calls it: the file, "run 12"
	Commit  string    // the commit it measured; empty: unknown
	Time    time.Time // when it ran; zero: unknown
	Records []results.Record
}

// runOfFile is a result file as a run: its records' git revision (the
// file's name when they have none) and their earliest time.
func runOfFile(file string, recs []results.Record) reportRun {
	r := reportRun{Name: file, Records: recs}
	for _, rec := range recs {
		if r.Commit == "" && rec.GitRev != "" {
			r.Commit = rec.GitRev
		}
		if !rec.Timestamp.IsZero() && (r.Time.IsZero() || rec.Timestamp.Before(r.Time)) {
			r.Time = rec.Timestamp
		}
	}
	if r.Commit == "" {
		r.Commit = filepath.Base(file)
	}
	return r
}

// reportInput is what buildReport makes a page of.
type reportInput struct {
	Title string
	Now   time.Time // the page's generation time
	// Runs are oldest first; the newest's records draw the curves, all
	// of them the metadata.
	Runs      []reportRun
	Normalize ci.Normalization
	// Values are the keys' series; nil: made from Runs (seriesOfRuns). A
	// history hands in its own (its Series per key).
	Values []keyValues
	// Changes are the change points found in each key's values, indices
	// into its Values' points.
	Changes map[ci.Key][]report.ChangePoint
	// Gate is a gate's outcome to show, with what it compared; nil: none.
	Gate                        *ci.Report
	GateBaseline, GateCandidate string
	Charts                      int // report.Page.Charts
}

// keyValues is a key's value in each run it has one, oldest first.
type keyValues struct {
	Key    ci.Key
	Stat   ci.Stat // what a point is: a run's median or its fastest iteration
	Points []report.RunPoint
}

// buildReport assembles the page: the newest run's curves, every key's
// series with its change points, the gate's table and the metadata. It
// does not check what report.Write checks (change points inside their
// series, finite values).
func buildReport(in reportInput) (report.Page, error) {
	if len(in.Runs) == 0 && len(in.Values) == 0 && in.Gate == nil {
		return report.Page{}, fmt.Errorf("nothing to report: no runs, no series, no gate")
	}
	p := report.Page{Title: in.Title, Generated: in.Now, Charts: in.Charts, Meta: reportMeta(in.Runs, in.Normalize)}
	if p.Title == "" {
		p.Title = report.DefaultTitle
	}
	values := in.Values
	if values == nil && len(in.Runs) > 0 {
		values = seriesOfRuns(in.Runs, in.Normalize)
		if len(values) == 0 {
			return report.Page{}, fmt.Errorf("none of the %d runs has a record with a busBW%s", len(in.Runs), normNeeds(in.Normalize))
		}
	}
	unit := ci.Unit(ci.BusBW, in.Normalize)
	for _, kv := range values {
		u := unit
		switch kv.Stat {
		case ci.StatFastest:
			u += ", fastest iteration"
		case ci.StatLow:
			u += ", 5th percentile"
		}
		p.Series = append(p.Series, report.KeySeries{Key: kv.Key.String(), Unit: u, Points: kv.Points, Changes: in.Changes[kv.Key]})
	}
	if len(in.Runs) > 0 {
		p.Curves = curvesOf(in.Runs, in.Normalize)
	}
	if in.Gate != nil {
		p.Gate = gateTable(in.Gate, in.GateBaseline, in.GateCandidate)
	}
	return p, nil
}

func normNeeds(n ci.Normalization) string {
	if n == ci.NormCopy {
		return " and a ref_copy_gbps (--normalize copy needs it)"
	}
	return ""
}

// busbwValue is a record's busBW as the gate takes it (ci.ValueOf): from
// its median iteration time where measured, divided by ref_copy_gbps
// under NormCopy. ok is false when it has none.
func busbwValue(r results.Record, n ci.Normalization) (float64, bool) {
	v, _, ok := ci.ValueOf(r, ci.BusBW, n)
	if !ok || !(v > 0) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

func medianOf(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	return (xs[(n-1)/2] + xs[n/2]) / 2
}

// seriesOfRuns is every key's value in each run: the median over the
// run's records of the key (several with -N cycles), keys in the gate's
// order (group, placement, size).
func seriesOfRuns(runs []reportRun, n ci.Normalization) []keyValues {
	byKey := map[ci.Key]*keyValues{}
	for _, run := range runs {
		vals := map[ci.Key][]float64{}
		for _, r := range run.Records {
			if v, ok := busbwValue(r, n); ok {
				k := ci.KeyOf(r)
				vals[k] = append(vals[k], v)
			}
		}
		for k, vs := range vals {
			kv := byKey[k]
			if kv == nil {
				kv = &keyValues{Key: k}
				byKey[k] = kv
			}
			kv.Points = append(kv.Points, report.RunPoint{Commit: run.Commit, Time: run.Time, Value: medianOf(vs)})
		}
	}
	keys := slices.SortedFunc(maps.Keys(byKey), keyOrder)
	out := make([]keyValues, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out
}

func keyOrder(a, b ci.Key) int {
	return cmp.Or(strings.Compare(a.Group(), b.Group()), strings.Compare(a.Placement, b.Placement), cmp.Compare(a.Size, b.Size))
}

// curveGroup is what one curve chart shares: the collective and where it
// ran.
type curveGroup struct {
	coll, typ, op  string
	nranks, nhosts int
}

func (g curveGroup) title() string {
	s := fmt.Sprintf("%s %s %s, %d ranks", g.coll, g.typ, g.op, g.nranks)
	if g.nhosts > 1 {
		s += fmt.Sprintf(", %d hosts", g.nhosts)
	}
	return s
}

// curvesOf draws the newest run's out-of-place records (in-place where it
// has no other): one chart per collective, type, op, ranks and hosts, one
// series per configuration, the median of each size. A chart of one
// configuration, when there are several runs, also has the oldest run's
// curve of it, to show how far it moved.
func curvesOf(runs []reportRun, n ci.Normalization) []report.Curve {
	newest := runs[len(runs)-1]
	charts := curveSeries(newest.Records, n, "")
	if len(runs) > 1 {
		oldest := curveSeries(runs[0].Records, n, " (oldest: "+runs[0].Name+")")
		for g, series := range charts {
			if old, ok := oldest[g]; ok && len(series) == 1 && len(old) == 1 {
				series[0].Name += " (newest: " + newest.Name + ")"
				charts[g] = append(series, old[0])
			}
		}
	}
	groups := slices.SortedFunc(maps.Keys(charts), func(a, b curveGroup) int {
		return cmp.Or(strings.Compare(a.coll, b.coll), strings.Compare(a.typ, b.typ), strings.Compare(a.op, b.op),
			cmp.Compare(a.nranks, b.nranks), cmp.Compare(a.nhosts, b.nhosts))
	})
	ylabel := "busBW (GB/s)"
	if n == ci.NormCopy {
		ylabel = "busBW / copy bandwidth"
	}
	var out []report.Curve
	for _, g := range groups {
		out = append(out, report.Curve{Title: g.title(), YLabel: ylabel, Series: charts[g]})
	}
	return out
}

// curveSeries groups records into charts and their series (by
// configuration, in the key's order), each point a size's median.
func curveSeries(recs []results.Record, n ci.Normalization, suffix string) map[curveGroup][]report.CurveSeries {
	placement := results.OutOfPlace
	if !slices.ContainsFunc(recs, func(r results.Record) bool { return r.Placement == results.OutOfPlace }) {
		placement = results.InPlace
	}
	type cfgKey struct {
		g   curveGroup
		cfg string
	}
	vals := map[cfgKey]map[int64][]float64{}
	for _, r := range recs {
		if r.Placement != placement || r.Size <= 0 {
			continue
		}
		v, ok := busbwValue(r, n)
		if !ok {
			continue
		}
		k := ci.KeyOf(r)
		ck := cfgKey{curveGroup{k.Collective, k.Type, k.Op, k.NRanks, k.NHosts}, k.Config()}
		if vals[ck] == nil {
			vals[ck] = map[int64][]float64{}
		}
		vals[ck][r.Size] = append(vals[ck][r.Size], v)
	}
	cks := slices.SortedFunc(maps.Keys(vals), func(a, b cfgKey) int { return strings.Compare(a.cfg, b.cfg) })
	out := map[curveGroup][]report.CurveSeries{}
	for _, ck := range cks {
		s := report.CurveSeries{Name: ck.cfg + suffix}
		for _, size := range slices.Sorted(maps.Keys(vals[ck])) {
			s.Points = append(s.Points, report.SizePoint{Bytes: size, Value: medianOf(vals[ck][size])})
		}
		out[ck.g] = append(out[ck.g], s)
	}
	return out
}

// gateTable is a gate's outcome as the page's table: its comparisons in
// the gate's order, then the keys of one side only.
func gateTable(r *ci.Report, baseline, candidate string) *report.GateTable {
	g := &report.GateTable{Baseline: baseline, Candidate: candidate, Unit: ci.Unit(r.Options.Metric, r.Options.Normalize), Pass: r.Pass()}
	for _, c := range r.Comparisons {
		p := c.P
		if !c.Tested {
			p = math.NaN()
		}
		g.Rows = append(g.Rows, report.GateRow{Key: c.Key.String(), Baseline: c.Base.Center, Candidate: c.Cand.Center,
			Change: c.Delta(), PValue: p, Verdict: c.Verdict.String()})
	}
	for _, side := range []struct {
		keys    []ci.Key
		verdict string
	}{{r.OnlyBaseline, "baseline only"}, {r.OnlyCandidate, "candidate only"}} {
		for _, k := range side.keys {
			g.Rows = append(g.Rows, report.GateRow{Key: k.String(), Baseline: math.NaN(), Candidate: math.NaN(),
				Change: math.NaN(), PValue: math.NaN(), Verdict: side.verdict})
		}
	}
	return g
}

// reportMeta describes the runs: how many, their commits, and the tools,
// machines and backends of their records, with the variables every record
// of the newest run recorded (results.KeepEnv's: never a credential).
// Names are chosen not to look like credentials (no "key": the report
// withholds those).
func reportMeta(runs []reportRun, n ci.Normalization) []report.Meta {
	if len(runs) == 0 {
		return nil
	}
	var all []results.Record
	for _, r := range runs {
		all = append(all, r.Records...)
	}
	first, last := runs[0], runs[len(runs)-1]
	meta := []report.Meta{{Name: "runs", Value: fmt.Sprintf("%d, oldest first: %s … %s", len(runs), first.Name, last.Name)}}
	if len(runs) == 1 {
		meta[0].Value = "1: " + first.Name
	}
	if first.Commit != "" || last.Commit != "" {
		meta = append(meta, report.Meta{Name: "commits", Value: first.Commit + " … " + last.Commit})
	}
	for _, f := range []struct {
		name string
		get  func(results.Record) string
	}{
		{"tool", func(r results.Record) string { return r.Tool }},
		{"machine", func(r results.Record) string {
			if r.CPU == "" {
				return r.Host
			}
			s := fmt.Sprintf("%s, %d cores", r.CPU, r.Cores)
			if r.Host != "" {
				s += " (" + r.Host + ")"
			}
			return s
		}},
		{"backend", func(r results.Record) string { return r.Backend }},
		{"libraries", func(r results.Record) string {
			if r.NCCLVersion == "" && r.CUDAVersion == "" {
				return ""
			}
			return "NCCL " + r.NCCLVersion + ", CUDA " + r.CUDAVersion
		}},
		{"Go", func(r results.Record) string { return r.GoVersion }},
	} {
		if v := distinct(all, f.get); v != "" {
			meta = append(meta, report.Meta{Name: f.name, Value: v})
		}
	}
	values := "busBW (GB/s) from each record's median time, the median of a run's records of a key"
	if n == ci.NormCopy {
		values += ", divided by the run's copy bandwidth (ref_copy_gbps)"
	}
	meta = append(meta, report.Meta{Name: "values", Value: values})
	if env := commonEnv(last.Records); env != "" {
		meta = append(meta, report.Meta{Name: "recorded env (newest run)", Value: env})
	}
	return meta
}

// distinct joins the distinct non-empty values, in order of appearance,
// at most 4 and a count of the others.
func distinct(recs []results.Record, get func(results.Record) string) string {
	seen := map[string]bool{}
	var vals []string
	for _, r := range recs {
		if v := get(r); v != "" && !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	if len(vals) > 4 {
		return strings.Join(vals[:4], "; ") + fmt.Sprintf("; and %d more", len(vals)-4)
	}
	return strings.Join(vals, "; ")
}

// commonEnv is "K=V K=V", sorted: the recorded variables every record
// has with one value.
func commonEnv(recs []results.Record) string {
	if len(recs) == 0 {
		return ""
	}
	common := maps.Clone(recs[0].Env)
	for _, r := range recs[1:] {
		for k, v := range common {
			if r.Env[k] != v {
				delete(common, k)
			}
		}
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(common)) {
		if results.KeepEnv(k) {
			kv = append(kv, k+"="+common[k])
		}
	}
	return strings.Join(kv, " ")
}
