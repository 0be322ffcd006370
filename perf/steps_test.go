package perf

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/tef"
)

// readValidTrace reads a --trace-steps file and checks it against the
// format's rules.
func readValidTrace(t *testing.T, path string) *tef.File {
	t.Helper()
	f, err := tef.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range tef.Validate(f) {
		t.Errorf("%s: %v", filepath.Base(path), err)
	}
	return f
}

// callsPerRank counts the operations on each rank's calls track.
func callsPerRank(f *tef.File) map[int]int {
	n := map[int]int{}
	for _, e := range f.TraceEvents {
		if e.Ph == "X" && e.Tid == tef.RankTrack {
			n[e.Pid]++
		}
	}
	return n
}

// TestTraceStepsOneProcess: --trace-steps writes one valid file holding
// every rank of the process, and on each rank's calls track exactly the
// timed iterations (sizes x placements x -n), not the warmup.
func TestTraceStepsOneProcess(t *testing.T) {
	for _, tc := range []struct {
		tt   *Test
		args []string
		name string // the operations' name
	}{
		{AllReduce, []string{"-t", "2", "--proto", "LL128"}, "allreduce"},
		{SendRecv, []string{"-t", "3"}, "sendrecv"},
		{AlltoAll, []string{"-t", "3"}, "alltoall"},
		{Broadcast, []string{"-t", "3", "-g", "1", "--nchannels", "2"}, "broadcast"},
	} {
		t.Run(tc.tt.Collective, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "steps.json")
			r := runPerf(t, tc.tt, args(tc.args, []string{"-b", "8", "-e", "32K", "-f", "64", "-n", "3", "-w", "2", "--trace-steps", path})...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			f := readValidTrace(t, path)
			calls := callsPerRank(f)
			ranks := 2
			if tc.tt != AllReduce {
				ranks = 3
			}
			const want = 3 * 2 * 3 // sizes (8, 512, 32K) x placements x iterations
			if len(calls) != ranks {
				t.Fatalf("calls tracks of %d ranks, want %d", len(calls), ranks)
			}
			for rank, n := range calls {
				if n != want {
					t.Errorf("rank %d: %d operations recorded, want %d (the timed iterations alone)", rank, n, want)
				}
			}
			for _, e := range f.TraceEvents {
				if e.Ph == "X" && e.Cat == tef.CatOp && e.Name != tc.name {
					t.Fatalf("operation %q, want %q", e.Name, tc.name)
				}
			}
			if f.OtherData["program"] != tc.tt.Prog {
				t.Errorf("otherData %v: want program %s", f.OtherData, tc.tt.Prog)
			}
		})
	}
}

// TestTraceStepsNP: with --np 2 each process writes its file, process 1's
// clock aligned to process 0's (the offset within its bound of the one
// the processes' wall-clock epochs give, on this host), and process 0
// merges them into one valid file that holds both ranks.
func TestTraceStepsNP(t *testing.T) {
	dir := t.TempDir()
	asChildren(t, dir)
	path := filepath.Join(t.TempDir(), "np.json")
	var out, errb bytes.Buffer
	if code := Main(AllReduce, []string{"--np", "2", "-b", "8", "-e", "64K", "-f", "8", "-n", "2", "-w", "1", "--trace-steps", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	epochs := make([]time.Time, 2)
	var clock map[string]any
	for k, p := range []string{path + ".0", path + ".1"} {
		f := readValidTrace(t, p)
		if calls := callsPerRank(f); len(calls) != 1 || calls[k] == 0 {
			t.Errorf("%s: operations of ranks %v, want rank %d's", filepath.Base(p), calls, k)
		}
		var err error
		if epochs[k], err = time.Parse(time.RFC3339Nano, f.OtherData["epoch"].(string)); err != nil {
			t.Fatal(err)
		}
		if k == 1 {
			clock = f.OtherData["clock"].(map[string]any)
		}
	}
	off, bound := clock["offset_ns"].(float64), clock["bound_ns"].(float64)
	wall := float64(epochs[1].Sub(epochs[0]))
	// The epochs are read from the wall clock and the monotonic one a
	// moment apart: a millisecond of slack.
	if bound <= 0 || off-wall > bound+1e6 || wall-off > bound+1e6 {
		t.Errorf("process 1's clock offset %.0f ns, bound %.0f ns: the epochs say %.0f ns", off, bound, wall)
	}
	m := readValidTrace(t, path)
	if calls := callsPerRank(m); len(calls) != 2 || calls[0] != calls[1] || calls[0] == 0 {
		t.Errorf("merged file: operations per rank %v, want as many for ranks 0 and 1", calls)
	}
	if files, _ := m.OtherData["files"].([]any); len(files) != 2 {
		t.Errorf("merged otherData %v: want both files'", m.OtherData)
	}
	noSegmentsLeft(t, dir)
}

// TestTraceStepsBadUse: an unwritable file, -D and -N 0 are usage errors that say what is wrong, before anything runs.
func TestTraceStepsBadUse(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir", "steps.json")
	r := runPerf(t, AllReduce, "-b", "8", "-e", "8", "-n", "1", "--trace-steps", missing)
	if r.code != exitInvalidUsage || !strings.Contains(r.stderr, "--trace-steps") || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("unwritable --trace-steps: exit %d, %q", r.code, r.stderr)
	}
	_, err := parseOptions("all_reduce_perf", []string{"-D", "1", "-R", "2", "--trace-steps", "x.json"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-D 1") {
		t.Errorf("--trace-steps with -D: %v", err)
	}
	_, err = parseOptions("all_reduce_perf", []string{"-N", "0", "--trace-steps", "x.json"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-N 0") {
		t.Errorf("--trace-steps with -N 0: %v", err)
	}
	if _, err := os.Stat("x.json"); err == nil {
		t.Error("a refused --trace-steps left its file")
	}
}

// TestTraceStepsSampled: --trace-every 4 records on every rank the same
// operations, those at stream positions that are multiples of 4: three of
// each placement's 12 timed iterations, and says so in otherData.
func TestTraceStepsSampled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.json")
	r := runPerf(t, AllReduce, "-t", "3", "-b", "8", "-e", "8", "-n", "12", "-w", "2", "--trace-every", "4", "--trace-steps", path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	f := readValidTrace(t, path)
	seqs := map[int][]float64{}
	for _, e := range f.TraceEvents {
		if e.Ph == "X" && e.Tid == tef.RankTrack {
			seq, _ := e.Args[tef.ArgSeq].(float64)
			seqs[e.Pid] = append(seqs[e.Pid], seq)
		}
	}
	if len(seqs) != 3 {
		t.Fatalf("calls tracks of ranks %v, want 3", seqs)
	}
	for rank, s := range seqs {
		if len(s) != 2*3 {
			t.Errorf("rank %d: %d operations recorded, want 6 (3 of each placement's 12)", rank, len(s))
		}
		for i, q := range s {
			if int(q)%4 != 0 || q != seqs[0][min(i, len(seqs[0])-1)] {
				t.Errorf("rank %d: operations at positions %v, want multiples of 4, as rank 0's %v", rank, s, seqs[0])
				break
			}
		}
	}
	if !strings.Contains(fmt.Sprint(f.OtherData["sampled"]), "one operation in 4") {
		t.Errorf("otherData %v: want the sampling said", f.OtherData)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace-every", "0", "--trace-steps", "x.json"}, "--trace-every 0"},
		{[]string{"--trace-every", "8"}, "give --trace-steps"},
		{[]string{"--backend", "nccl", "--trace-every", "8", "--trace-steps", "x.json"}, "NCCL's profiler plugin records every operation"},
	} {
		if _, err := parseOptions("all_reduce_perf", tc.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
