package cli

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

const (
	gateRuns = "../../ci/testdata/embedded_n5.jsonl"          // 5 runs per key, per-iteration samples, ref_copy_gbps
	gateNCCL = "../../ci/testdata/h200x2_all_reduce_perf.txt" // an nccl-tests log: one run, no ref_copy_gbps
)

// writeRecords writes recs as JSONL into dir/name.
func writeRecords(t *testing.T, dir, name string, recs []results.Record) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := results.NewJSONLWriter(f)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// slowedCopy writes the real runs with sizes >= 256K 20% slower.
func slowedCopy(t *testing.T, dir string) string {
	recs, err := results.ReadFile(gateRuns)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Size >= 256<<10 {
			r.TimeUs *= 1.2
			r.MedianUs *= 1.2
			r.BusBw /= 1.2
			r.AlgBw /= 1.2
			for j := range r.IterTimesUs {
				r.IterTimesUs[j] *= 1.2
			}
			recs[i] = r
		}
	}
	return writeRecords(t, dir, "slow.jsonl", recs)
}

func TestGateIdenticalPasses(t *testing.T) {
	for _, f := range []string{gateRuns, gateNCCL} {
		code, stdout, stderr := runCLI("gate", "--baseline", f, "--candidate", f)
		if code != 0 || !strings.Contains(stdout, "PASS") || stderr != "" {
			t.Errorf("%s: exit %d\n%s%s", f, code, stdout, stderr)
		}
	}
	code, stdout, stderr := runCLI("gate", "--baseline", gateRuns, "--candidate", gateRuns, "--normalize", "copy", "--threshold", "8-64K=15%,64K-=5%", "--metric", "time", "--min-size", "1K")
	if code != 0 || !strings.Contains(stdout, "4 keys compared") {
		t.Errorf("with every option: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestGateRegressionExitsOneAndWritesReports(t *testing.T) {
	dir := t.TempDir()
	slow := slowedCopy(t, dir)
	md, junit, js := filepath.Join(dir, "gate.md"), filepath.Join(dir, "junit.xml"), filepath.Join(dir, "gate.json")
	code, stdout, stderr := runCLI("gate", "--baseline", gateRuns, "--candidate", slow, "--normalize", "copy",
		"--markdown", md, "--junit", junit, "--json", js)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"FAIL: 2 regressions", "256K out-of-place", "2M out-of-place", "-16.7%"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(b), "❌ Performance gate: FAIL: 2 regressions") {
		t.Errorf("Markdown: %v\n%s", err, b)
	}
	b, _ = os.ReadFile(junit)
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(b, &suites); err != nil || suites.Tests != 7 || suites.Failures != 2 {
		t.Errorf("JUnit: %v, %+v", err, suites)
	}
	b, _ = os.ReadFile(js)
	var rep struct {
		ExitCode int `json:"exit_code"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || rep.ExitCode != 1 {
		t.Errorf("JSON: %v, %+v", err, rep)
	}
}

func TestGateTakesSeveralFilesPerFlag(t *testing.T) {
	dir := t.TempDir()
	slow := slowedCopy(t, dir)
	// Both runs as the candidate: the slowed keys are then bimodal, the
	// others unchanged; the baseline twice is the same baseline.
	js := filepath.Join(dir, "gate.json")
	code, stdout, stderr := runCLI("gate", "--baseline", gateRuns, gateRuns, "--candidate", gateRuns, slow, "--threshold", "30%", "--json", js)
	if code != 0 || !strings.Contains(stdout, "7 keys compared") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
	b, _ := os.ReadFile(js)
	var rep struct {
		Comparisons []struct {
			Baseline, Candidate struct{ Runs int }
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Comparisons) != 7 || rep.Comparisons[0].Baseline.Runs != 10 || rep.Comparisons[0].Candidate.Runs != 10 {
		t.Errorf("not 10 runs a side: %v %+v", err, rep)
	}
	if got := fileLists([]string{"--baseline", "a", "b", "--json", "x", "y", "--candidate=c", "d", "--", "--baseline", "e"}, "--baseline", "--candidate"); strings.Join(got, " ") !=
		"--baseline a --baseline b --json x y --candidate=c --candidate d -- --baseline e" {
		t.Errorf("fileLists: %q", got)
	}
}

func TestGateBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.txt")
	os.WriteFile(garbage, []byte("hello\nworld\n"), 0o644)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	future := filepath.Join(dir, "future.jsonl")
	os.WriteFile(future, []byte(`{"schema":99,"collective":"allreduce","size":8,"time_us":1,"busbw_gbps":1}`+"\n"), 0o644)
	recs, _ := results.ReadFile(gateRuns)
	for i := range recs {
		recs[i].Collective = "broadcast"
	}
	other := writeRecords(t, dir, "other.jsonl", recs)
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no files", []string{}, "give both --baseline FILES and --candidate FILES"},
		{"no candidate", []string{"--baseline", gateRuns}, "give both"},
		{"positional", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--json", "x.json", "stray"}, `unexpected argument "stray"`},
		{"unknown flag", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--treshold", "5%"}, "unknown flag: --treshold"},
		{"missing file", []string{"--baseline", filepath.Join(dir, "nope.jsonl"), "--candidate", gateRuns}, "baseline: open"},
		{"unreadable format", []string{"--baseline", gateRuns, "--candidate", garbage}, "candidate: " + garbage + ": not gccl JSONL"},
		{"empty file", []string{"--baseline", empty, "--candidate", gateRuns}, "empty file"},
		{"schema too new", []string{"--baseline", gateRuns, "--candidate", future}, "schema version too new"},
		{"no keys in common", []string{"--baseline", gateRuns, "--candidate", other}, "no keys in common: the sides differ in collective: baseline {allreduce}, candidate {broadcast}"},
		{"no reference to normalise", []string{"--baseline", gateNCCL, "--candidate", gateNCCL, "--normalize", "copy"}, "no ref_copy_gbps"},
		{"bad threshold", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--threshold", "8-64K"}, "--threshold: invalid threshold"},
		{"overlapping bands", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--threshold", "8-64K=15%,32K-=5%"}, "overlap"},
		{"size in no band", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--threshold", "64K-=5%"}, "is in no --threshold band"},
		{"bad metric", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--metric", "algbw"}, "--metric: invalid option: metric \"algbw\""},
		{"bad normalize", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--normalize", "cpu"}, "--normalize: invalid option"},
		{"bad min-size", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--min-size", "big"}, "--min-size: invalid size"},
		{"min-size above all", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--min-size", "1G"}, "below --min-size 1G"},
		{"bad alpha", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--alpha", "2"}, "alpha 2"},
		{"bad tag", []string{"--baseline", gateNCCL + "@proto=XL", "--candidate", gateNCCL}, "proto=XL"},
		{"unwritable report", []string{"--baseline", gateRuns, "--candidate", gateRuns, "--junit", filepath.Join(dir, "no", "dir.xml")}, "directory " + filepath.Join(dir, "no") + " does not exist"},
	} {
		code, stdout, stderr := runCLI(append([]string{"gate"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.msg) || !strings.HasPrefix(stderr, "tune gate") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q\n%s", tc.name, code, stderr, tc.msg, stdout)
		}
	}
}

func TestGateRequireAll(t *testing.T) {
	dir := t.TempDir()
	recs, _ := results.ReadFile(gateRuns)
	var fewer []results.Record
	for _, r := range recs {
		if r.Size != 8 {
			fewer = append(fewer, r)
		}
	}
	part := writeRecords(t, dir, "part.jsonl", fewer)
	code, stdout, _ := runCLI("gate", "--baseline", gateRuns, "--candidate", part)
	if code != 0 || !strings.Contains(stdout, "only in the baseline:\n  allreduce float sum auto/auto/auto 2 ranks 8 out-of-place") {
		t.Errorf("exit %d\n%s", code, stdout)
	}
	code, stdout, _ = runCLI("gate", "--baseline", gateRuns, "--candidate", part, "--require-all")
	if code != 1 || !strings.Contains(stdout, "FAIL: keys missing on one side (--require-all)") {
		t.Errorf("--require-all: exit %d\n%s", code, stdout)
	}
}

func TestGateHelp(t *testing.T) {
	code, _, stderr := runCLI("gate", "--help")
	if code != 0 || !strings.Contains(stderr, "Exit status: 0 pass, 1 regression, 2 bad input") || !strings.Contains(stderr, "--normalize") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	_, stdout, _ := runCLI("help")
	if !strings.Contains(stdout, "gate ") || !strings.Contains(stdout, "baseline ") {
		t.Errorf("usage lacks gate and baseline:\n%s", stdout)
	}
}

func TestBaselineRecordsAndThins(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "base.jsonl")
	code, stdout, stderr := runCLI("baseline", "--output", out, "--iter-samples", "5", gateRuns)
	if code != 0 || !strings.Contains(stdout, "35 records, 7 keys, 5-5 runs per key") || !strings.Contains(stdout, "2 cores") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	recs, err := results.ReadFile(out)
	if err != nil || len(recs) != 35 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
	for _, r := range recs {
		if len(r.IterTimesUs) != 5 || r.RefCopyGBps == 0 || r.MedianUs == 0 {
			t.Fatalf("record %s %d: %d samples, ref %v", r.Collective, r.Size, len(r.IterTimesUs), r.RefCopyGBps)
		}
	}
	if code, _, stderr := runCLI("gate", "--baseline", out, "--candidate", gateRuns, "--normalize", "copy"); code != 0 {
		t.Errorf("the real runs fail against their own baseline: %s", stderr)
	}
	if code, _, stderr := runCLI("baseline", "--output", out, gateRuns); code != 2 || !strings.Contains(stderr, "already exists") {
		t.Errorf("overwrote without --force: exit %d %s", code, stderr)
	}
	if code, _, stderr := runCLI("baseline", "--output", out, "--force", "--iter-samples", "0", gateRuns, gateRuns); code != 0 {
		t.Errorf("--force: exit %d %s", code, stderr)
	}
	if recs, _ := results.ReadFile(out); len(recs) != 70 || len(recs[0].IterTimesUs) != 0 {
		t.Errorf("--iter-samples 0: %d records, %d samples in the first", len(recs), len(recs[0].IterTimesUs))
	}
	code, stdout, _ = runCLI("baseline", "--output", filepath.Join(dir, "n.jsonl"), gateNCCL)
	if code != 0 || !strings.Contains(stdout, "cannot be used with --normalize copy") || !strings.Contains(stdout, "fewer than 5 runs") {
		t.Errorf("nccl-tests log: exit %d\n%s", code, stdout)
	}
}

func TestBaselineBadInput(t *testing.T) {
	dir := t.TempDir()
	recs, _ := results.ReadFile(gateRuns)
	recs[3].Wrong = 7
	wrong := writeRecords(t, dir, "wrong.jsonl", recs)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{gateRuns}, "--output FILE is required"},
		{[]string{"--output", filepath.Join(dir, "b.jsonl")}, "no result files"},
		{[]string{"--output", filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "nope")}, "no such file"},
		{[]string{"--output", filepath.Join(dir, "b.jsonl"), wrong}, "reports 7 wrong elements"},
		{[]string{"--output", filepath.Join(dir, "b.jsonl"), "--iter-samples", "-1", gateRuns}, "--iter-samples -1: want 0 (drop them) or more"},
	} {
		code, _, stderr := runCLI(append([]string{"baseline"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.msg)
		}
	}
}
