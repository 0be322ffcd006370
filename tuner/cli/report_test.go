package cli

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/report"
	"github.com/gccl/gccl/results"
)

const reportBase = "../../ci/baseline/embedded.jsonl" // one sweep of the embedded stack, with ref_copy_gbps

// reportRuns writes n runs made of the baseline's records, run i at
// commit rev<i> an hour after the one before; the last run's sizes from
// 256K on 20% slower.
func reportRuns(t *testing.T, dir string, n int) []string {
	t.Helper()
	base, err := results.ReadFile(reportBase)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for i := range n {
		recs := make([]results.Record, len(base))
		for j, r := range base {
			r.GitRev = "rev" + string(rune('0'+i))
			r.Timestamp = r.Timestamp.Add(time.Duration(i) * time.Hour)
			r.Env = map[string]string{"NCCL_PROTO": "Simple", "GCCL_ALGO": "Ring"}
			if i == n-1 && r.Size >= 256<<10 {
				r.TimeUs, r.MedianUs, r.BusBw, r.AlgBw = r.TimeUs*1.2, r.MedianUs*1.2, r.BusBw/1.2, r.AlgBw/1.2
			}
			recs[j] = r
		}
		files = append(files, writeRecords(t, dir, "run"+string(rune('0'+i))+".jsonl", recs))
	}
	return files
}

// distinctKeys counts the gate's keys among a file's records.
func distinctKeys(t *testing.T, path string) int {
	recs, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[ci.Key]bool{}
	for _, r := range recs {
		keys[ci.KeyOf(r)] = true
	}
	return len(keys)
}

// tune report of 4 result files with a baseline: one page with a
// sparkline per key, the newest run's curves, the gate failing on the
// slowed sizes, the commits and the recorded variables; no URL.
func TestReportFromFiles(t *testing.T) {
	dir := t.TempDir()
	runs := reportRuns(t, dir, 4)
	out := filepath.Join(dir, "report.html")
	args := append([]string{"report", "--output", out, "--baseline", reportBase, "--title", "embedded stack <b>"}, runs...)
	code, stdout, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	keys := distinctKeys(t, reportBase)
	if want := "wrote " + out + ": 4 runs, "; !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, "gate FAIL") {
		t.Errorf("stdout %q, want it to start %q and say the gate failed", stdout, want)
	}
	if n := strings.Count(page, `<svg class="spark"`); n != keys {
		t.Errorf("%d sparklines, want one per key: %d", n, keys)
	}
	if n := strings.Count(page, `<svg class="curve"`); n < 1 {
		t.Errorf("%d curve charts", n)
	}
	for _, want := range []string{
		"<title>embedded stack &lt;b&gt;</title>",
		"rev0 … rev3",                                // commits
		"GCCL_ALGO=Ring NCCL_PROTO=Simple",           // the recorded variables, sorted
		"regression",                                 // the gate's verdict
		"candidate " + runs[3],                       // what the gate compared
		"allreduce float sum auto/auto/auto 2 ranks", // a key
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if i := strings.Index(strings.ToLower(page), "://"); i >= 0 {
		t.Errorf("the page names a URL: %q", page[max(0, i-80):min(len(page), i+80)])
	}
	// Only the slowed sizes' keys moved (256K and 2M): they alone are
	// drawn in full.
	drawn := regexp.MustCompile(`<figure id="key\d+"><h3>([^<]*)</h3>`).FindAllStringSubmatch(page, -1)
	if len(drawn) != 2 {
		t.Errorf("%d keys drawn in full, want the 2 slowed ones", len(drawn))
	}
	for _, m := range drawn {
		if !regexp.MustCompile(` (256K|2M) out-of-place$`).MatchString(m[1]) {
			t.Errorf("drawn in full: %q, which did not move", m[1])
		}
	}
}

// Bad invocations exit 2 naming the problem; an existing page is kept
// without --force.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	runs := reportRuns(t, dir, 2)
	existing := filepath.Join(dir, "old.html")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	nccl := "../../ci/testdata/h200x2_all_reduce_perf.txt"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{runs[0]}, "--output FILE is required"},
		{[]string{"--output", filepath.Join(dir, "x.html")}, "no result files"},
		{[]string{"--output", filepath.Join(dir, "x.html"), "--charts", "-1", runs[0]}, "--charts -1"},
		{[]string{"--output", filepath.Join(dir, "x.html"), "--normalize", "speed", runs[0]}, "--normalize"},
		{[]string{"--output", filepath.Join(dir, "x.html"), "--threshold", "lots", runs[0]}, "--threshold"},
		{[]string{"--output", filepath.Join(dir, "x.html"), "--normalize", "copy", nccl}, "ref_copy_gbps"},
		{[]string{"--output", filepath.Join(dir, "x.html"), filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"--output", existing, runs[0]}, "exists"},
	} {
		code, _, stderr := runCLI(append([]string{"report"}, tc.args...)...)
		if code != exitBad || !strings.Contains(stderr, tc.want) {
			t.Errorf("tune report %v: exit %d, %q; want exit 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("the existing page was overwritten: %q", b)
	}
	if code, _, stderr := runCLI("report", "--output", existing, "--force", runs[0]); code != exitOK {
		t.Errorf("--force: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.html")); err == nil {
		t.Error("a failed report left a page behind")
	}
}

// buildReport with a history's values and change points: each key's
// change points land on its series, and the page renders them.
func TestReportBuildWithChanges(t *testing.T) {
	k1 := ci.Key{Collective: "allreduce", Type: "float", Op: "sum", Algorithm: "auto", Protocol: "auto", NRanks: 4, NHosts: 1, Size: 1 << 20, Placement: results.OutOfPlace}
	k2 := k1
	k2.Size = 4 << 20
	var pts1, pts2 []report.RunPoint
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := range 20 {
		v := 10.0
		if i >= 12 {
			v = 9
		}
		pts1 = append(pts1, report.RunPoint{Commit: "c" + string(rune('a'+i)), Time: t0.Add(time.Duration(i) * time.Hour), Value: v})
		pts2 = append(pts2, report.RunPoint{Commit: "c" + string(rune('a'+i)), Time: t0.Add(time.Duration(i) * time.Hour), Value: 20})
	}
	in := reportInput{
		Now:     t0,
		Values:  []keyValues{{Key: k1, Points: pts1}, {Key: k2, Stat: ci.StatFastest, Points: pts2}},
		Changes: map[ci.Key][]report.ChangePoint{k1: {{Index: 12, Before: 10, After: 9, PValue: 0.001}}},
	}
	p, err := buildReport(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Series) != 2 || len(p.Series[0].Changes) != 1 || len(p.Series[1].Changes) != 0 || p.Series[0].Key != k1.String() {
		t.Fatalf("series %+v", p.Series)
	}
	if p.Series[0].Unit != "GB/s" || p.Series[1].Unit != "GB/s, fastest iteration" {
		t.Errorf("units %q and %q: want the second to say it is the fastest iteration", p.Series[0].Unit, p.Series[1].Unit)
	}
	var sb strings.Builder
	if err := report.Write(&sb, p); err != nil {
		t.Fatal(err)
	}
	page := sb.String()
	for _, want := range []string{`id="change-table"`, "cl → cm", "-10.0%", k1.String()} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if _, err := buildReport(reportInput{}); err == nil {
		t.Error("an empty input built a page")
	}
}

// A record's value is its busBW at its median time, by nccl-tests'
// formula; divided by its copy bandwidth under NormCopy; none without it.
func TestReportBusbwValue(t *testing.T) {
	r := results.Record{Collective: "allreduce", NRanks: 4, Size: 1 << 20, TimeUs: 200, MedianUs: 100, BusBw: 7.86, RefCopyGBps: 50}
	want := 1.5 * float64(1<<20) / 100 / 1e3
	if v, ok := busbwValue(r, ci.NormNone); !ok || math.Abs(v-want) > 1e-12 {
		t.Errorf("busbw %v %v, want %v", v, ok, want)
	}
	if v, ok := busbwValue(r, ci.NormCopy); !ok || math.Abs(v-want/50) > 1e-12 {
		t.Errorf("normalised %v %v, want %v", v, ok, want/50)
	}
	r.RefCopyGBps = 0
	if _, ok := busbwValue(r, ci.NormCopy); ok {
		t.Error("a record without ref_copy_gbps normalised")
	}
	// An unknown collective: the reported busBW, rescaled to the median.
	u := results.Record{Collective: "hypercube2", NRanks: 4, Size: 1024, TimeUs: 200, MedianUs: 100, BusBw: 3}
	if v, ok := busbwValue(u, ci.NormNone); !ok || v != 6 {
		t.Errorf("unknown collective: %v %v, want 6", v, ok)
	}
}
