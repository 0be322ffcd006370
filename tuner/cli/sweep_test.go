package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
	"github.com/gccl/gccl/tuner"
)

func sweepArgs(out string, extra ...string) []string {
	return append([]string{"sweep", "--colls", "allreduce,allgather", "--ranks", "2", "--proto", "LL,Simple",
		"--algo", "all", "-b", "8", "-e", "512", "-f", "8", "-n", "3", "-w", "1", "--max-time", "50ms", "--output", out}, extra...)
}

// A sweep measures every (collective, configuration, size) once, out of
// place, with adaptive iterations; a second run resumes and measures
// nothing; a cut-short run redoes only what is missing.
func TestSweepMeasuresAndResumes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sweep.jsonl")
	code, stdout, stderr := runCLI(sweepArgs(out)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := results.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// allreduce: auto + Ring x {LL, Simple} + Tree x {LL, Simple} + OneShot x
	// LL + TwoShot x LL; allgather: auto + Ring x {LL, Simple} + OneShot x LL;
	// 3 sizes each (8, 64, 512).
	if want := (7 + 4) * 3; len(recs) != want {
		t.Fatalf("%d records, want %d\n%s", len(recs), want, stdout)
	}
	keys := map[tuner.Key]int{}
	for _, r := range recs {
		if r.Placement != results.OutOfPlace || r.StopReason == "" || r.Iterations < 3 || len(r.IterTimesUs) != r.Iterations {
			t.Fatalf("record %+v: want out of place, a stop reason, every iteration's time", r)
		}
		keys[tuner.KeyOf(r)]++
	}
	if len(keys) != 11 {
		t.Fatalf("%d configurations, want 11: %v", len(keys), keys)
	}
	if code, stdout, _ = runCLI(sweepArgs(out)...); code != 0 || !strings.Contains(stdout, "0 points to measure") {
		t.Fatalf("resume: exit %d, want nothing to measure:\n%s", code, stdout)
	}
	// Cut the file after 10 records: a resume measures the other 23.
	lines := strings.SplitAfter(readString(t, out), "\n")
	if err := os.WriteFile(out, []byte(strings.Join(lines[:10], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ = runCLI(sweepArgs(out)...); code != 0 || !strings.Contains(stdout, "23 points to measure") {
		t.Fatalf("partial resume: exit %d:\n%s", code, stdout)
	}
	if recs, err = results.ReadFile(out); err != nil || len(recs) != 33 {
		t.Fatalf("after the resume: %d records (%v), want 33", len(recs), err)
	}
	// A killed run's part file is salvaged, and so is the temporary file
	// of a part perf had not yet put in place.
	part := filepath.Join(filepath.Dir(out), ".sweep.jsonl.part")
	tmp := strings.Replace(results.TempPattern(part), "*", "4242-1", 1)
	lines = strings.SplitAfter(readString(t, out), "\n")
	if err := os.WriteFile(out, []byte(strings.Join(lines[:20], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(part, []byte(strings.Join(lines[20:27], "")+`{"trunc`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, []byte(strings.Join(lines[27:33], "")+`{"trunc`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ = runCLI(sweepArgs(out)...); code != 0 || !strings.Contains(stdout, "0 points to measure") {
		t.Fatalf("salvage: exit %d:\n%s", code, stdout)
	}
	for _, p := range []string{part, tmp} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left after the salvage", p)
		}
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSweepBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.jsonl")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"sweep"}, "--output FILE is required"},
		{[]string{"sweep", "--output", out, "--colls", "allfoo"}, `unknown collective "allfoo"`},
		{[]string{"sweep", "--output", out, "--ranks", "0"}, "--ranks"},
		{[]string{"sweep", "--output", out, "--proto", "LL64"}, `--proto: unknown value "LL64" (valid: LL, LL128, Simple, all)`},
		{[]string{"sweep", "--output", out, "--proto", "auto"}, `--proto: unknown value "auto"`},
		{[]string{"sweep", "--output", out, "--algo", "Mesh"}, `--algo: unknown value "Mesh" (valid: Ring, Tree, OneShot, TwoShot, all)`},
		{[]string{"sweep", "--output", out, "-b", "1M", "-e", "1K"}, "-b <= -e"},
		{[]string{"sweep", "--output", out, "stray"}, `unexpected argument "stray"`},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code != exitBad || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args, code, stderr, c.want)
		}
	}
}

// --repeat measures every point in that many separate runs, and resumes by
// count.
func TestSweepRepeat(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.jsonl")
	args := []string{"sweep", "--colls", "allreduce", "--ranks", "2", "--proto", "LL", "--algo", "Ring",
		"--auto=false", "-b", "8", "-e", "64", "-f", "8", "-n", "3", "-w", "1", "--max-time", "20ms", "--repeat", "3", "--output", out}
	if code, stdout, stderr := runCLI(args...); code != 0 || !strings.Contains(stdout, "6 points to measure in 3 runs") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	recs, err := results.ReadFile(out)
	if err != nil || len(recs) != 6 {
		t.Fatalf("%d records (%v), want 2 sizes x 3 runs", len(recs), err)
	}
	series := tuner.Collect(recs)
	if len(series) != 1 || len(series[0].Samples) != 2 {
		t.Fatalf("series %+v: want one configuration with 2 sizes", series)
	}
	if code, stdout, _ := runCLI(args...); code != 0 || !strings.Contains(stdout, "0 points to measure") {
		t.Fatalf("resume: exit %d:\n%s", code, stdout)
	}
}

// By default a shape's configurations run side by side in one perf run
// (perf --interleave); --interleave=false gives each its own run.
func TestSweepInterleave(t *testing.T) {
	for _, tc := range []struct {
		flag string
		runs string
		want bool
	}{{"--interleave=true", "20 points to measure in 2 runs", true}, {"--interleave=false", "20 points to measure in 10 runs", false}} {
		out := filepath.Join(t.TempDir(), "i.jsonl")
		args := []string{"sweep", "--colls", "allreduce", "--ranks", "2", "--proto", "LL,Simple", "--algo", "Ring", "--nchannels", "1,2",
			"-b", "8", "-e", "64", "-f", "8", "-n", "3", "-w", "1", "--max-time", "20ms", "--repeat", "2", "--output", out, tc.flag}
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.flag, code, stderr)
		}
		recs, err := results.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		keys := map[tuner.Key]int{}
		for _, r := range recs {
			if r.Interleaved != tc.want {
				t.Errorf("%s: record interleaved=%v", tc.flag, r.Interleaved)
			}
			keys[tuner.KeyOf(r)]++
		}
		// auto + Ring x {LL, Simple} x {1, 2}: 5 configurations, 2 sizes, 2 runs each.
		if len(keys) != 5 || len(recs) != 20 {
			t.Errorf("%s: %d records of %d configurations, want 20 of 5", tc.flag, len(recs), len(keys))
		}
		if !strings.Contains(stdout, tc.runs) {
			t.Errorf("%s: %s", tc.flag, stdout)
		}
	}
}

// Sizes perf records differently (whole floats per rank: 64 B over 3 ranks
// is a 60 B row) resume as done, and sizes below a float per rank are not
// planned at all.
func TestSweepRowSizes(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rows.jsonl")
	args := []string{"sweep", "--colls", "allgather", "--ranks", "3", "--proto", "LL", "--algo", "Ring",
		"-b", "8", "-e", "64", "-f", "8", "-n", "3", "-w", "1", "--max-time", "20ms", "--output", out}
	// 8 B is below a float per rank; 64 B records as 60 B.
	if code, stdout, stderr := runCLI(args...); code != 0 || !strings.Contains(stdout, "2 points to measure") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	recs, err := results.ReadFile(out)
	if err != nil || len(recs) != 2 || recs[0].Size != 60 {
		t.Fatalf("%d records (%v), first %+v: want 2 of 60 B", len(recs), err, recs)
	}
	if code, stdout, _ := runCLI(args...); code != 0 || !strings.Contains(stdout, "0 points to measure") {
		t.Fatalf("resume: exit %d:\n%s", code, stdout)
	}
}
