package perf

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// naInPlace lists the tests whose in-place result nccl-tests does not check.
var naInPlace = map[*Test]bool{SendRecv: true, AlltoAll: true, AlltoAllv: true}

// checkRun checks the frame of an nccl-tests output: the header lines, the
// table header, the footer; it returns the data rows.
func checkRun(t *testing.T, tt *Test, r result, nThreads, nGpus int) []string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	out := lines(r.stdout)
	for _, want := range []string{
		"# Collective test starting: " + tt.Prog,
		"# Using devices",
		"# Out of bounds values : 0 OK",
		"# Collective test concluded: " + tt.Prog,
	} {
		if !hasLine(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !strings.HasPrefix(out[0], "# nccl-tests version 2.19.6 compatible: gccl "+Version+" backend=embedded") {
		t.Errorf("first line %q", out[0])
	}
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^# nThread %d nGpus %d minBytes \d+ maxBytes \d+ step: \d+\((factor|bytes)\) warmup iters: \d+ iters: \d+ agg iters: \d+ validation: \d+ graph: 0 unalign: \d+$`, nThreads, nGpus)).MatchString(r.stdout) {
		t.Errorf("no nThread line for -t %d -g %d", nThreads, nGpus)
	}
	ranks := regexp.MustCompile(`(?m)^#  Rank +\d+ Group  0 Pid +\d+ on +\S+ device +\d+ \[cpu\] .+$`).FindAllString(r.stdout, -1)
	if len(ranks) != nThreads*nGpus {
		t.Errorf("%d Rank lines, want %d", len(ranks), nThreads*nGpus)
	}
	if !regexp.MustCompile(`(?m)^# Avg bus bandwidth    : [0-9.e+-]+ $`).MatchString(r.stdout) {
		t.Errorf("no 'Avg bus bandwidth' line")
	}
	if r.stderr != "" {
		t.Errorf("stderr: %q", r.stderr)
	}
	return dataRows(r.stdout)
}

// TestEndToEnd runs every test on 1, 3 and 4 ranks (hypercube: 1, 2 and 4)
// over five sizes and checks every row.
func TestEndToEnd(t *testing.T) {
	cleanBwEnv(t)
	sizes := []int64{8, 64, 512, 4096, 32768}
	for _, tt := range Tests {
		gs := []int{1, 3, 4}
		if tt == Hypercube {
			gs = []int{1, 2, 4}
		}
		for _, g := range gs {
			t.Run(fmt.Sprintf("%s/g%d", tt.Prog, g), func(t *testing.T) {
				r := runPerf(t, tt, args(tiny, []string{"-g", strconv.Itoa(g)})...)
				rows := checkRun(t, tt, r, 1, g)
				if !containsSeq(lines(r.stdout), headerLines(false, false, false, false)) {
					t.Errorf("no table header")
				}
				if len(rows) != len(sizes) {
					t.Fatalf("%d rows, want %d:\n%s", len(rows), len(sizes), r.stdout)
				}
				for i, row := range rows {
					f := strings.Fields(row)
					if len(f) != 13 {
						t.Fatalf("row has %d columns: %q", len(f), row)
					}
					param, rowBytes := tt.Counts(sizes[i], 4, g)
					op, root := "none", "-1"
					if tt.Reduces {
						op = "sum"
					}
					if tt.Rooted {
						root = "0"
					}
					want := []string{strconv.FormatInt(rowBytes, 10), strconv.Itoa(param), "float", op, root}
					if got := f[:5]; strings.Join(got, " ") != strings.Join(want, " ") {
						t.Errorf("row %q starts %q, want %q", row, got, want)
					}
					if f[8] != "0" {
						t.Errorf("out-of-place #wrong %q in %q", f[8], row)
					}
					wantIn := "0"
					if naInPlace[tt] {
						wantIn = "N/A"
					}
					if f[12] != wantIn {
						t.Errorf("in-place #wrong %q, want %q in %q", f[12], wantIn, row)
					}
					for _, c := range []int{5, 6, 7, 9, 10, 11} {
						if v, err := strconv.ParseFloat(f[c], 64); err != nil || v < 0 {
							t.Errorf("column %d = %q in %q", c, f[c], row)
						}
					}
					// The row rebuilds from its own numbers: widths as nccl-tests'.
					if got := parseNCCLRow(t, row).format(); got != row {
						t.Errorf("row does not rebuild:\n got %q\nwant %q", got, row)
					}
				}
			})
		}
	}
}

// TestNoCheck: -c 0 prints N/A in every #wrong column.
func TestNoCheck(t *testing.T) {
	cleanBwEnv(t)
	for _, tt := range []*Test{AllReduce, AllGather, SendRecv, Broadcast} {
		r := runPerf(t, tt, args(tiny, []string{"-g", "2", "-c", "0"})...)
		rows := checkRun(t, tt, r, 1, 2)
		if !strings.Contains(r.stdout, "validation: 0 ") {
			t.Errorf("%s: header does not say validation: 0", tt.Prog)
		}
		for _, row := range rows {
			f := strings.Fields(row)
			if f[8] != "N/A" || f[12] != "N/A" {
				t.Errorf("%s -c 0: %q, want N/A twice", tt.Prog, row)
			}
		}
	}
}

// TestThreads: -t 2 -g 2 is four ranks driven by two threads.
func TestThreads(t *testing.T) {
	cleanBwEnv(t)
	for _, tt := range []*Test{AllReduce, Broadcast, SendRecv, AlltoAll, Hypercube} {
		t.Run(tt.Prog, func(t *testing.T) {
			r := runPerf(t, tt, args(tiny, []string{"-t", "2", "-g", "2"})...)
			rows := checkRun(t, tt, r, 2, 2)
			if len(rows) != 5 {
				t.Fatalf("%d rows", len(rows))
			}
			for _, row := range rows {
				f := strings.Fields(row)
				if f[8] != "0" || (f[12] != "0" && !naInPlace[tt]) {
					t.Errorf("%q", row)
				}
			}
		})
	}
	// Every -a mode and blocking mode with threads.
	for _, extra := range [][]string{{"-a", "0"}, {"-a", "2"}, {"-a", "3"}, {"-z", "1"}, {"-z", "2"}, {"-z", "3"}, {"-m", "3"}, {"-u", "3"}, {"-N", "2"}} {
		r := runPerf(t, AllReduce, args(tiny, []string{"-t", "2", "-g", "2"}, extra)...)
		rows := checkRun(t, AllReduce, r, 2, 2)
		want := 5
		if extra[0] == "-N" {
			want = 10
		}
		if len(rows) != want {
			t.Errorf("%v: %d rows, want %d", extra, len(rows), want)
		}
	}
}

// TestPerIterColumns: -I 1 adds i_min i_max i_p99 i_cv% to each placement.
func TestPerIterColumns(t *testing.T) {
	cleanBwEnv(t)
	r := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "-I", "1", "-n", "4"})...)
	rows := checkRun(t, AllReduce, r, 1, 2)
	if !containsSeq(lines(r.stdout), headerLines(false, false, true, false)) {
		t.Errorf("no per-iteration table header")
	}
	if !hasLine(r.stdout, "# Per-Iteration Report: wall-clock timing; i_* uses max over threads ") {
		t.Errorf("no per-iteration note")
	}
	for _, row := range rows {
		f := strings.Fields(row)
		if len(f) != 21 {
			t.Fatalf("row has %d columns, want 21: %q", len(f), row)
		}
		for _, p := range []int{5, 13} {
			v := make([]float64, 8)
			for i := range v {
				if i == 3 {
					continue // #wrong
				}
				x, err := strconv.ParseFloat(f[p+i], 64)
				if err != nil || x < 0 {
					t.Fatalf("column %d = %q in %q", p+i, f[p+i], row)
				}
				v[i] = x
			}
			min, max, p99 := v[4], v[5], v[6]
			if f[p+3] != "0" || min > p99 || p99 > max {
				t.Errorf("placement at %d: #wrong %s, min %g p99 %g max %g in %q", p, f[p+3], min, p99, max, row)
			}
		}
	}
}

// TestBitwiseColumn: -K 1 adds #bitdiff, 0 for a deterministic stack.
func TestBitwiseColumn(t *testing.T) {
	cleanBwEnv(t)
	for _, tt := range []*Test{AllReduce, ReduceScatter, SendRecv} {
		r := runPerf(t, tt, args(tiny, []string{"-g", "3", "-K", "1", "-d", "float", "-o", "sum"})...)
		rows := checkRun(t, tt, r, 1, 3)
		if !containsSeq(lines(r.stdout), headerLines(false, false, false, true)) {
			t.Errorf("%s: no bitwise table header", tt.Prog)
		}
		if !hasLine(r.stdout, "# Bitwise Repeatability: 1 comparisons after one reference run ") {
			t.Errorf("%s: no bitwise note", tt.Prog)
		}
		for _, row := range rows {
			f := strings.Fields(row)
			if len(f) != 15 {
				t.Fatalf("%s: row has %d columns, want 15: %q", tt.Prog, len(f), row)
			}
			if f[9] != "0" || f[14] != "0" {
				t.Errorf("%s: #bitdiff %s %s in %q", tt.Prog, f[9], f[14], row)
			}
		}
	}
	// Both optional column sets at once.
	r := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "-K", "1", "-I", "1"})...)
	for _, row := range checkRun(t, AllReduce, r, 1, 2) {
		if f := strings.Fields(row); len(f) != 23 || f[9] != "0" || f[18] != "0" {
			t.Errorf("-K 1 -I 1 row %q", row)
		}
	}
}

// TestTimestamps: -S 1 appends the time to every row.
func TestTimestamps(t *testing.T) {
	cleanBwEnv(t)
	r := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "-S", "1"})...)
	rows := checkRun(t, AllReduce, r, 1, 2)
	if !containsSeq(lines(r.stdout), headerLines(false, true, false, false)) {
		t.Errorf("no timestamp table header")
	}
	ts := regexp.MustCompile(`  \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)
	for _, row := range rows {
		if !ts.MatchString(row) {
			t.Errorf("no timestamp at the end of %q", row)
		}
		if f := strings.Fields(row); len(f) != 15 {
			t.Errorf("%d fields in %q", len(f), row)
		}
	}
}

// TestCPUTimeAndMemReport: -C 1 relabels the time columns; -M 1 reports memory.
func TestCPUTimeAndMemReport(t *testing.T) {
	cleanBwEnv(t)
	r := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "-C", "1", "-M", "1"})...)
	checkRun(t, AllReduce, r, 1, 2)
	if !containsSeq(lines(r.stdout), headerLines(true, false, false, false)) {
		t.Errorf("no cputime table header")
	}
	if !regexp.MustCompile(`(?m)^# Host memory usage +: buffers \S+ per rank \| Total \S+$`).MatchString(r.stdout) {
		t.Errorf("no memory report:\n%s", r.stdout)
	}
}

// TestConfigSweep: --proto LL,Simple --nchannels 1,2 runs four
// configurations, each with its "# Config:" line and its own table.
func TestConfigSweep(t *testing.T) {
	cleanBwEnv(t)
	r := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "--proto", "LL,Simple", "--nchannels", "1,2"})...)
	rows := checkRun(t, AllReduce, r, 1, 2)
	if len(rows) != 4*5 {
		t.Errorf("%d rows, want 20", len(rows))
	}
	var configs []string
	out := lines(r.stdout)
	hdr := headerLines(false, false, false, false)
	for i, l := range out {
		if c, ok := strings.CutPrefix(l, "# Config: "); ok {
			configs = append(configs, c)
			if !containsSeq(out[i+1:min(len(out), i+1+len(hdr))], hdr) {
				t.Errorf("config %q is not followed by the table header", c)
			}
		}
	}
	want := []string{
		"proto=LL algo=auto nchannels=1 buffsize=default",
		"proto=LL algo=auto nchannels=2 buffsize=default",
		"proto=Simple algo=auto nchannels=1 buffsize=default",
		"proto=Simple algo=auto nchannels=2 buffsize=default",
	}
	if strings.Join(configs, "\n") != strings.Join(want, "\n") {
		t.Errorf("configs:\n%s\nwant:\n%s", strings.Join(configs, "\n"), strings.Join(want, "\n"))
	}
	// One axis of one value still labels its table.
	r = runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "--buffsize", "64K", "--algo", "ring"})...)
	checkRun(t, AllReduce, r, 1, 2)
	if !hasLine(r.stdout, "# Config: proto=auto algo=Ring nchannels=auto buffsize=64K") {
		t.Errorf("no config line for --buffsize 64K --algo ring:\n%s", r.stdout)
	}
}

// TestNotes: GPU-only flags that are ignored say so in the header.
func TestNotes(t *testing.T) {
	cleanBwEnv(t)
	r := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "-y", "1", "-R", "1", "-V", "4", "-x", "1", "-p", "1"})...)
	checkRun(t, AllReduce, r, 1, 2)
	for _, n := range []string{"-y/--stream_null", "-R/--local_register", "-V/--device_cta_count", "-x/--cta_policy", "-p/--parallel_init"} {
		if !regexp.MustCompile(`(?m)^# Note: ` + regexp.QuoteMeta(n) + ` ignored: .+$`).MatchString(r.stdout) {
			t.Errorf("no note for %s", n)
		}
	}
}
