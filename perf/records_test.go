package perf

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/results"
)

// recordRun runs test tt with --out and --csv into a temporary directory
// and returns the run and both files' records.
func recordRun(t *testing.T, tt *Test, extra ...string) (r result, jsonl, csv []results.Record, dir string) {
	t.Helper()
	dir = t.TempDir()
	out, csvPath := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.csv")
	r = runPerf(t, tt, args([]string{"--out", out, "--csv", csvPath}, extra)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var err error
	if jsonl, err = results.ReadFile(out); err != nil {
		t.Fatalf("reading %s: %v", out, err)
	}
	if csv, err = results.ReadFile(csvPath); err != nil {
		t.Fatalf("reading %s: %v", csvPath, err)
	}
	return r, jsonl, csv, dir
}

// rowsFromRecords rebuilds the table rows from records, two per row.
func rowsFromRecords(t *testing.T, recs []results.Record) []string {
	t.Helper()
	if len(recs)%2 != 0 {
		t.Fatalf("%d records: not two per row", len(recs))
	}
	var rows []string
	for i := 0; i < len(recs); i += 2 {
		o, in := recs[i], recs[i+1]
		if o.Placement != results.OutOfPlace || in.Placement != results.InPlace {
			t.Fatalf("records %d, %d: placements %q, %q", i, i+1, o.Placement, in.Placement)
		}
		row := rowPreamble(o.Size, o.Count, o.Type, o.Op, o.Root)
		for _, p := range []results.Record{o, in} {
			row += placementCols{timeUs: p.TimeUs, algBw: p.AlgBw, busBw: p.BusBw, wrong: p.Wrong}.format(false)
		}
		rows = append(rows, row)
	}
	return rows
}

// TestRecords: --out and --csv write one record per (size, placement) with
// every field of the schema, the same values as the printed table, and
// only the recorded environment variables (results.KeepEnv).
func TestRecords(t *testing.T) {
	cleanBwEnv(t)
	t.Setenv("GCCL_TIMEOUT", "7m")                      // recorded: it changes what runs
	t.Setenv("GCCL_PERFTEST_MARKER", "gccl-unrecorded") // not on the allow-list
	t.Setenv("NCCL_PERFTEST_MARKER", "nccl-marker")
	t.Setenv("SECRET_PERFTEST_TOKEN", "hunter2")
	t.Setenv("MY_GCCL_PERFTEST", "not-a-prefix")
	before := time.Now()
	host, _ := os.Hostname()

	for _, tc := range []struct {
		name             string
		tt               *Test
		args             []string
		n                int
		algo, proto      string
		channels         int
		buff, chosenBuff int64
		op               string
		roots            []int
	}{
		{"allreduce axes", AllReduce, []string{"-g", "2", "-b", "1K", "-e", "4K", "-f", "2", "-n", "3", "-w", "1",
			"--proto", "Simple", "--nchannels", "2", "--buffsize", "1M", "--algo", "Ring"},
			2, "Ring", "Simple", 2, 1 << 20, 1 << 20, "sum", []int{-1}},
		{"broadcast roots", Broadcast, []string{"-g", "3", "-b", "96", "-e", "192", "-f", "2", "-n", "2", "-w", "0", "-r", "all"},
			3, "auto", "auto", 0, 0, ccl.DefaultSimpleBuffSize, "none", []int{0, 0, 1, 1, 2, 2}},
		{"allgather count", AllGather, []string{"-g", "4", "-b", "1K", "-e", "1K", "-n", "2", "-w", "0", "-d", "half"},
			4, "auto", "auto", 0, 0, ccl.DefaultSimpleBuffSize, "none", []int{-1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, jsonl, csv, dir := recordRun(t, tc.tt, tc.args...)
			rows := dataRows(r.stdout)
			if len(jsonl) != 2*len(rows) || len(rows) == 0 {
				t.Fatalf("%d records for %d rows", len(jsonl), len(rows))
			}
			// The records hold exactly the printed numbers.
			if got := rowsFromRecords(t, jsonl); strings.Join(got, "\n") != strings.Join(rows, "\n") {
				t.Errorf("rows rebuilt from the JSONL records:\n%s\nprinted:\n%s", strings.Join(got, "\n"), strings.Join(rows, "\n"))
			}
			// CSV and JSONL carry the same values.
			if len(csv) != len(jsonl) {
				t.Fatalf("%d CSV records, %d JSONL", len(csv), len(jsonl))
			}
			for i := range jsonl {
				a, b := jsonl[i], csv[i]
				if !a.Timestamp.Equal(b.Timestamp) {
					t.Errorf("record %d: timestamps %v vs %v", i, a.Timestamp, b.Timestamp)
				}
				a.Timestamp, b.Timestamp = time.Time{}, time.Time{}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("record %d differs between JSONL and CSV:\n%+v\n%+v", i, a, b)
				}
			}
			for i, rec := range jsonl {
				place := results.OutOfPlace
				if i%2 == 1 {
					place = results.InPlace
				}
				elt := map[string]int{"float": 4, "half": 2}[rec.Type]
				param, rowBytes := tc.tt.Counts(rec.Size, elt, tc.n)
				wantAlg, wantBus := tc.tt.BusBw(param, elt, tc.n, rec.TimeUs/1e6)
				checks := []struct {
					field string
					ok    bool
				}{
					{"schema", rec.Schema == results.SchemaVersion},
					{"tool", rec.Tool == "gccl "+Version},
					{"timestamp", !rec.Timestamp.Before(before.Truncate(time.Second)) && !rec.Timestamp.After(time.Now())},
					{"host", rec.Host == host && host != ""},
					{"cpu", rec.CPU == cpuModel() && rec.CPU != ""},
					{"cores", rec.Cores == runtime.NumCPU()},
					{"go_version", rec.GoVersion == runtime.Version()},
					{"backend", rec.Backend == "embedded"},
					{"nranks", rec.NRanks == tc.n},
					{"nprocs", rec.NProcs == 1 && rec.NHosts == 1},
					{"collective", rec.Collective == tc.tt.Collective},
					{"type", elt != 0},
					{"op", rec.Op == tc.op},
					{"root", rec.Root == tc.roots[(i/2)%len(tc.roots)]},
					{"algorithm", rec.Algorithm == tc.algo},
					{"protocol", rec.Protocol == tc.proto},
					{"channels", rec.Channels == tc.channels},
					{"buffsize", rec.BuffSize == tc.buff},
					{"chosen_buffsize", rec.ChosenBuff == tc.chosenBuff},
					{"chosen_algo", rec.ChosenAlgo != ""},
					{"chosen_proto", rec.ChosenProto != "" && (tc.proto == "auto" || rec.ChosenProto == tc.proto)},
					{"chosen_channels", rec.ChosenCh > 0 && (tc.channels == 0 || rec.ChosenCh <= tc.channels)},
					{"placement", rec.Placement == place},
					{"size", rec.Size == rowBytes && rec.Size > 0},
					{"count", rec.Count == int64(param)},
					{"iterations", strconv.Itoa(rec.Iterations) == argValue(tc.args, "-n")},
					{"agg_iters", rec.AggIters == 1},
					{"time", rec.TimeUs > 0},
					{"algbw", rec.AlgBw == wantAlg && rec.AlgBw > 0},
					{"busbw", rec.BusBw == wantBus},
					{"wrong", rec.Wrong == 0},
					{"ref_copy_gbps", rec.RefCopyGBps > 0},
					{"env marker", rec.Env["GCCL_TIMEOUT"] == "7m" && rec.Env["NCCL_PERFTEST_MARKER"] == "nccl-marker"},
				}
				for _, c := range checks {
					if !c.ok {
						t.Errorf("record %d: bad %s: %+v", i, c.field, rec)
					}
				}
				for k := range rec.Env {
					if !strings.HasPrefix(k, "GCCL_") && !strings.HasPrefix(k, "NCCL_") {
						t.Errorf("record %d: env holds %s", i, k)
					}
				}
			}
			// Nothing outside the two prefixes reaches the files.
			for _, name := range []string{"r.jsonl", "r.csv"} {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "SECRET_PERFTEST") || strings.Contains(string(b), "MY_GCCL_PERFTEST") || strings.Contains(string(b), "gccl-unrecorded") {
					t.Errorf("%s leaks a variable that is not recorded", name)
				}
			}
		})
	}
}

// argValue is the value following flag in args, or "".
func argValue(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// TestTextRoundTrip: the printed table reads back through the results
// package's nccl-tests text reader with the records' values.
func TestTextRoundTrip(t *testing.T) {
	cleanBwEnv(t)
	r, jsonl, _, _ := recordRun(t, ReduceScatter, "-g", "4", "-b", "1K", "-e", "16K", "-f", "4", "-n", "2", "-w", "0", "-I", "1")
	text, err := results.Read("stdout", strings.NewReader(r.stdout))
	if err != nil {
		t.Fatalf("reading the printed table: %v", err)
	}
	if len(text) != len(jsonl) {
		t.Fatalf("%d records from the text, %d from JSONL", len(text), len(jsonl))
	}
	// The text holds the records' values as printed: compare the printed forms.
	same := func(text, rec float64, width int) bool { return floatStr(text, width) == floatStr(rec, width) }
	for i := range text {
		a, b := text[i], jsonl[i]
		if a.Collective != b.Collective || a.NRanks != b.NRanks || a.Size != b.Size || a.Count != b.Count ||
			a.Type != b.Type || a.Op != b.Op || a.Root != b.Root || a.Placement != b.Placement || a.Wrong != b.Wrong ||
			a.Iterations != b.Iterations || !same(a.TimeUs, b.TimeUs, 7) || !same(a.AlgBw, b.AlgBw, 6) || !same(a.BusBw, b.BusBw, 6) {
			t.Errorf("record %d:\ntext  %+v\njsonl %+v", i, a, b)
		}
		if !same(a.MinUs, b.MinUs, 7) || !same(a.MaxUs, b.MaxUs, 7) || !same(a.P99Us, b.P99Us, 7) {
			t.Errorf("record %d per-iteration: text %v %v %v, jsonl %v %v %v", i, a.MinUs, a.MaxUs, a.P99Us, b.MinUs, b.MaxUs, b.P99Us)
		}
	}
}

// TestNCCLJSONRoundTrip: -J writes nccl-tests' JSON, which reads back
// through the results package with the values of the JSONL records.
func TestNCCLJSONRoundTrip(t *testing.T) {
	cleanBwEnv(t)
	for _, tc := range []struct {
		tt   *Test
		args []string
	}{
		{AllReduce, []string{"-g", "2", "-b", "1K", "-e", "4K", "-f", "2", "-n", "2", "-w", "0"}},
		{Scatter, []string{"-g", "3", "-b", "96", "-e", "96", "-n", "2", "-w", "0", "-r", "all"}},
		{SendRecv, []string{"-g", "2", "-b", "64", "-e", "64", "-n", "2", "-w", "0", "-I", "1"}},
	} {
		t.Run(tc.tt.Prog, func(t *testing.T) {
			dir := t.TempDir()
			jpath := filepath.Join(dir, "nccl.json")
			_, jsonl, _, _ := recordRun(t, tc.tt, args(tc.args, []string{"-J", jpath})...)
			st, err := os.Stat(jpath)
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() == 0 {
				t.Fatal("-J wrote an empty file")
			}
			var nranksBug string
			defer func() {
				if nranksBug != "" {
					t.Errorf("%s: nccl-tests lists one config.devices entry per process, and the reader derives nranks from it", nranksBug)
				}
			}()
			recs, err := results.ReadFile(jpath)
			if err != nil {
				t.Fatalf("reading -J output: %v", err)
			}
			if len(recs) != len(jsonl) {
				t.Fatalf("%d records from -J, %d from --out", len(recs), len(jsonl))
			}
			for i := range recs {
				a, b := recs[i], jsonl[i]
				if a.Collective != b.Collective || a.Size != b.Size || a.Count != b.Count || a.Type != b.Type ||
					a.Op != b.Op || a.Root != b.Root || a.Placement != b.Placement || a.Wrong != b.Wrong ||
					a.Iterations != b.Iterations || a.TimeUs != b.TimeUs || a.AlgBw != b.AlgBw || a.BusBw != b.BusBw {
					t.Errorf("record %d:\n-J    %+v\n--out %+v", i, a, b)
				}
				if a.NRanks != b.NRanks {
					nranksBug = fmt.Sprintf("-J reads back as %d ranks, the run had %d", a.NRanks, b.NRanks)
				}
				if !a.Timestamp.Truncate(time.Second).Equal(b.Timestamp.Truncate(time.Second)) {
					t.Errorf("record %d: start time %v, want %v", i, a.Timestamp, b.Timestamp)
				}
			}
		})
	}
}

// TestResultFilesNeverOverwritten: --out, --csv and -J refuse an existing
// file (exit 6, nothing measured, the file untouched) unless --force.
func TestResultFilesNeverOverwritten(t *testing.T) {
	cleanBwEnv(t)
	for _, flag := range []string{"--out", "--csv", "-J"} {
		t.Run(flag, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "existing")
			const old = "precious data\n"
			if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			small := []string{"-g", "2", "-b", "64", "-e", "64", "-n", "1", "-w", "0"}
			r := runPerf(t, AllReduce, args(small, []string{flag, path})...)
			if r.code != exitInvalidUsage {
				t.Errorf("exit %d, want %d", r.code, exitInvalidUsage)
			}
			if !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "already exists") {
				t.Errorf("stderr %q does not say that %s exists", r.stderr, path)
			}
			if r.stdout != "" {
				t.Errorf("measured despite the error:\n%s", r.stdout)
			}
			if b, _ := os.ReadFile(path); string(b) != old {
				t.Errorf("the existing file was changed: %q", b)
			}
			r = runPerf(t, AllReduce, args(small, []string{flag, path, "--force"})...)
			if r.code != 0 {
				t.Fatalf("--force: exit %d\n%s", r.code, r.stderr)
			}
			recs, err := results.ReadFile(path)
			if err != nil || len(recs) != 2 {
				t.Errorf("--force: %d records, %v", len(recs), err)
			}
		})
	}
}

// TestResultFilesRefusedLeaveNothing: when one of two outputs exists, the
// run is refused, and the other output must not be left behind: an empty
// a.jsonl would refuse the next run too.
func TestResultFilesRefusedLeaveNothing(t *testing.T) {
	cleanBwEnv(t)
	dir := t.TempDir()
	first, existing := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.csv")
	if err := os.WriteFile(existing, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runPerf(t, AllReduce, "-b", "64", "-e", "64", "-n", "1", "-w", "0", "--out", first, "--csv", existing)
	if r.code != exitInvalidUsage || !strings.Contains(r.stderr, existing) {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(first); err == nil {
		t.Fatalf("the refused run left %s behind, so the next run would fail with %q", filepath.Base(first), "a.jsonl already exists")
	}
}

// TestMinBandwidth: GCCL_MIN_BW / NCCL_TESTS_MIN_BW set a floor on the
// average bus bandwidth: below 90% of it the footer says FAILED and the
// exit code is 7; a zero floor says OK.
func TestMinBandwidth(t *testing.T) {
	small := args(tiny, []string{"-g", "2"})
	for _, tc := range []struct {
		env, value string
		code       int
		status     string
	}{
		{"GCCL_MIN_BW", "1e9", exitDataError, "FAILED"},
		{"GCCL_MIN_BW", "0", exitOK, "OK"},
		{"NCCL_TESTS_MIN_BW", "1e9", exitDataError, "FAILED"},
		{"NCCL_TESTS_MIN_BW", "0", exitOK, "OK"},
		{"GCCL_MIN_BW", " 1e9 ", exitDataError, "FAILED"},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			cleanBwEnv(t)
			t.Setenv(tc.env, tc.value)
			r := runPerf(t, AllReduce, small...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d", r.code, tc.code)
			}
			if !regexp.MustCompile(`(?m)^# Avg bus bandwidth    : [0-9.e+-]+ ` + tc.status + `$`).MatchString(r.stdout) {
				t.Errorf("no '%s' bandwidth line:\n%s", tc.status, r.stdout)
			}
			if !hasLine(r.stdout, "# Out of bounds values : 0 OK") {
				t.Errorf("the data check must still pass")
			}
			if len(dataRows(r.stdout)) != 5 {
				t.Errorf("every size must still be measured")
			}
		})
	}
	// Unset: no status word, exit 0.
	cleanBwEnv(t)
	r := runPerf(t, AllReduce, small...)
	if r.code != 0 || !regexp.MustCompile(`(?m)^# Avg bus bandwidth    : [0-9.e+-]+ $`).MatchString(r.stdout) {
		t.Errorf("no floor: exit %d\n%s", r.code, r.stdout)
	}
}

// A forced tree over simulated hosts is recorded with its host count, who
// chose what, and the model's predicted time; --algo all on a collective
// without a tree sweeps the ring and the one-shot only.
func TestRecordsTreeAndHosts(t *testing.T) {
	_, recs, _, _ := recordRun(t, AllReduce, "-g", "4", "--ranks-per-host", "1", "-b", "1K", "-e", "4K", "-f", "2",
		"-n", "2", "-w", "0", "--algo", "Tree")
	for _, r := range recs {
		if r.NHosts != 4 || r.Algorithm != "Tree" || r.ChosenAlgo != "Tree" || r.ChosenBy != "forced+model" || r.PredictedUs <= 0 || r.Wrong != 0 {
			t.Fatalf("record %+v: want 4 hosts, a forced tree with the model's protocol and channels, a predicted time, 0 wrong", r)
		}
	}
	_, recs, _, _ = recordRun(t, AllGather, "-g", "2", "-b", "1K", "-e", "1K", "-n", "2", "-w", "0", "--algo", "all")
	ran := map[string]bool{}
	for _, r := range recs {
		if (r.Algorithm != "Ring" && r.Algorithm != "OneShot") || r.ChosenAlgo != r.Algorithm {
			t.Fatalf("allgather --algo all ran %s (chosen %s), want Ring and OneShot only", r.Algorithm, r.ChosenAlgo)
		}
		ran[r.Algorithm] = true
	}
	if !ran["Ring"] || !ran["OneShot"] {
		t.Fatalf("allgather --algo all ran %v, want Ring and OneShot", ran)
	}
}
