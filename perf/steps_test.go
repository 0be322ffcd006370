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

// TestTraceStepsOneProcess: --trace-steps (--trace-every 1) writes one
// valid file holding every rank of the process, and on each rank's calls
// track exactly the timed iterations (sizes x placements x -n), not the
// warmup.
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
			r := runPerf(t, tc.tt, args(tc.args, []string{"-b", "8", "-e", "32K", "-f", "64", "-n", "3", "-w", "2", "--trace-every", "1", "--trace-steps", path})...)
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
	f := runTraced(t, "-t", "3", "-b", "8", "-e", "8", "-n", "12", "-w", "2", "--trace-every", "4")
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
	if fmt.Sprint(f.OtherData["trace_every"]) != "map[8:4]" || !strings.Contains(fmt.Sprint(f.OtherData["sampled"]), "one operation in N") {
		t.Errorf("otherData %v: want the sampling said", f.OtherData)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace-every", "0", "--trace-steps", "x.json"}, `--trace-every "0": want auto`},
		{[]string{"--trace-every", "often", "--trace-steps", "x.json"}, `--trace-every "often": want auto`},
		{[]string{"--trace-every", "8"}, "give --trace-steps"},
		{[]string{"--backend", "nccl", "--trace-every", "8", "--trace-steps", "x.json"}, "NCCL's profiler plugin records every operation"},
	} {
		if _, err := parseOptions("all_reduce_perf", tc.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// autoTraceEvery: 64 up to 4 KiB, halving as the size doubles, 1 from
// 256 KiB; always a power of two (the positions a size records are a
// subset of a smaller size's).
func TestAutoTraceEvery(t *testing.T) {
	for _, tc := range []struct {
		bytes int64
		want  int
	}{{0, 64}, {1, 64}, {8, 64}, {4 << 10, 64}, {4<<10 + 1, 64}, {5 << 10, 64}, {8 << 10, 32}, {12 << 10, 32},
		{16 << 10, 16}, {64 << 10, 4}, {128 << 10, 2}, {200 << 10, 2}, {256 << 10, 1}, {1 << 20, 1}, {1 << 40, 1}} {
		if got := autoTraceEvery(tc.bytes); got != tc.want {
			t.Errorf("autoTraceEvery(%d) = %d, want %d", tc.bytes, got, tc.want)
		}
	}
	for b := int64(1); b <= 1<<20; b += 97 {
		n := autoTraceEvery(b)
		if n&(n-1) != 0 || n < 1 || n > maxAutoEvery || (n < maxAutoEvery && int64(n)*b < fullTraceBytes) || (n > 1 && int64(n/2)*b >= fullTraceBytes) {
			t.Fatalf("autoTraceEvery(%d) = %d: want the least power of two with N*bytes >= %d, at most %d", b, n, fullTraceBytes, maxAutoEvery)
		}
	}
}

// TestTraceStepsAuto: by default (--trace-every auto) the 8 B rows record
// one operation in 64 and the 256 KiB rows every one, on every rank, and
// otherData says so.
func TestTraceStepsAuto(t *testing.T) {
	f := runTraced(t, "-t", "2", "-b", "8", "-e", "256K", "-f", "32768", "-n", "128", "-w", "2")
	rows := map[int]map[float64]int{} // rank -> bytes -> operations
	for _, e := range f.TraceEvents {
		if e.Ph == "X" && e.Tid == tef.RankTrack {
			b, _ := e.Args[tef.ArgBytes].(float64)
			if rows[e.Pid] == nil {
				rows[e.Pid] = map[float64]int{}
			}
			rows[e.Pid][b]++
		}
	}
	want := map[float64]int{8: 2 * 2, 256 << 10: 2 * 128} // placements x (128/64, 128/1)
	if len(rows) != 2 {
		t.Fatalf("ranks %v, want 2", rows)
	}
	for rank, got := range rows {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("rank %d: operations by bytes %v, want %v", rank, got, want)
		}
	}
	if got := fmt.Sprint(f.OtherData["trace_every"]); got != "map[262144:1 8:64]" {
		t.Errorf("otherData trace_every %s, want 8 B sampled 1 in 64, 256 KiB all", got)
	}
}

// runTraced runs allreduce_perf with args and --trace-steps, and returns
// its valid trace.
func runTraced(t *testing.T, args ...string) *tef.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "steps.json")
	r := runPerf(t, AllReduce, append(args, "--trace-steps", path)...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	return readValidTrace(t, path)
}
