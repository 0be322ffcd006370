package perf

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/results"
)

// --interleave measures every configuration of --configs at every size on
// one set of communicators: each gets its records (interleaved, with what
// it was forced to run, data checked) and its own table block, in order,
// the same blocks a run without --interleave prints.
func TestInterleaveRecordsAndBlocks(t *testing.T) {
	configs := "auto,Ring/LL/1,Ring/LL128/2,Tree/Simple/3,Ring/auto/auto"
	base := []string{"-g", "3", "-b", "256", "-e", "64K", "-f", "16", "-n", "3", "-w", "1", "--configs", configs}
	r, recs, _, _ := recordRun(t, AllReduce, args(base, []string{"--interleave", "--precision", "5%", "--max-time", "50ms"})...)
	want := []struct {
		algo, proto string
		nch         int
	}{{"auto", "auto", 0}, {"Ring", "LL", 1}, {"Ring", "LL128", 2}, {"Tree", "Simple", 3}, {"Ring", "auto", 0}}
	sizes := []int64{256, 4096, 65536}
	if len(recs) != len(want)*len(sizes)*2 {
		t.Fatalf("%d records, want %d", len(recs), len(want)*len(sizes)*2)
	}
	seen := map[string]int{}
	for _, rec := range recs {
		i := -1
		for j, w := range want {
			if rec.Algorithm == w.algo && rec.Protocol == w.proto && rec.Channels == w.nch {
				i = j
			}
		}
		if i < 0 {
			t.Fatalf("record of an unknown configuration: %+v", rec)
		}
		w := want[i]
		seen[w.algo+w.proto]++
		if !rec.Interleaved || rec.Wrong != 0 || rec.StopReason == "" || len(rec.IterTimesUs) == 0 {
			t.Errorf("%s/%s/%d %d B: interleaved %v, wrong %d, stop %q, %d iterations", w.algo, w.proto, w.nch, rec.Size, rec.Interleaved, rec.Wrong, rec.StopReason, len(rec.IterTimesUs))
		}
		if w.algo != "auto" && rec.ChosenAlgo != w.algo {
			t.Errorf("%s/%s/%d %d B ran %s", w.algo, w.proto, w.nch, rec.Size, rec.ChosenAlgo)
		}
		if w.proto != "auto" && rec.ChosenProto != w.proto {
			t.Errorf("%s/%s/%d %d B ran %s", w.algo, w.proto, w.nch, rec.Size, rec.ChosenProto)
		}
		maxCh := w.nch
		if maxCh == 0 {
			maxCh = ccl.DefaultMaxNChannels()
		}
		if rec.ChosenCh < 1 || rec.ChosenCh > maxCh {
			t.Errorf("%s/%s/%d %d B ran on %d channels, want 1..%d", w.algo, w.proto, w.nch, rec.Size, rec.ChosenCh, maxCh)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("configurations recorded: %v", seen)
	}
	// The blocks: one per configuration, in --configs order, each with a
	// row per size, as the run without --interleave prints them.
	plain := runPerf(t, AllReduce, base...)
	if plain.code != 0 {
		t.Fatalf("exit %d: %s", plain.code, plain.stderr)
	}
	blocks := func(out string) []string {
		var b []string
		for _, l := range lines(out) {
			if strings.HasPrefix(l, "# Config:") {
				b = append(b, l)
			}
		}
		return b
	}
	if got, w := blocks(r.stdout), blocks(plain.stdout); !reflect.DeepEqual(got, w) || len(got) != len(want) {
		t.Errorf("interleaved blocks %q, want %q", got, w)
	}
	if n := len(dataRows(r.stdout)); n != len(want)*len(sizes) {
		t.Errorf("%d rows, want %d", n, len(want)*len(sizes))
	}
}

// Without --precision every configuration runs one batch of -n per size;
// buffer sizes split the configurations into groups of their own.
func TestInterleaveFixedItersAndBuffGroups(t *testing.T) {
	_, recs, _, _ := recordRun(t, AllGather, "-g", "2", "-b", "1K", "-e", "8K", "-f", "8", "-n", "4", "-w", "1", "-I", "1",
		"--configs", "Ring/Simple/1,Ring/LL/2", "--buffsize", "1M,2M", "--interleave", "--out-of-place-only")
	if len(recs) != 2*2*2 {
		t.Fatalf("%d records, want 8", len(recs))
	}
	for _, rec := range recs {
		if len(rec.IterTimesUs) != 4 || rec.Wrong != 0 || rec.Placement != results.OutOfPlace {
			t.Errorf("%+v: want 4 iterations, checked, out of place", rec)
		}
	}
	if g := interleaveGroups([]RunConfig{{BuffSize: 1}, {BuffSize: 2}, {BuffSize: 1, Proto: protoReq("LL")}}); len(g) != 2 || len(g[0]) != 2 || len(g[1]) != 1 {
		t.Errorf("interleaveGroups: %+v", g)
	}
}

func TestForcedOf(t *testing.T) {
	if f := forcedOf(RunConfig{}); f != (ccl.Forced{MaxNChannels: ccl.DefaultMaxNChannels()}) {
		t.Errorf("auto: %+v, want the stack's default channel cap", f)
	}
	if f := forcedOf(RunConfig{Algo: algoReq("Tree"), Proto: protoReq("LL"), NChannels: 3}); f != (ccl.Forced{Algo: algoReq("Tree"), Proto: protoReq("LL"), NChannels: 3}) {
		t.Errorf("forced: %+v", f)
	}
}

func TestConfigsErrors(t *testing.T) {
	for _, tc := range []struct {
		tt   *Test
		args []string
		want string
	}{
		{AllReduce, []string{"--configs", "Ring/LL"}, "not three parts"},
		{AllReduce, []string{"--configs", "Ring/LL64/1"}, "unknown protocol"},
		{AllReduce, []string{"--configs", "Mesh/LL/1"}, "unknown algorithm"},
		{AllReduce, []string{"--configs", "Ring/LL/0"}, "channels must be 1..64 or auto"},
		{AllReduce, []string{"--configs", "auto", "--proto", "LL"}, "not both"},
		{AllGather, []string{"--configs", "Tree/Simple/1"}, "allgather has no Tree algorithm"},
	} {
		r := runPerf(t, tc.tt, args(tiny, tc.args)...)
		if r.code != exitInvalidUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want usage error containing %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// A backend whose ranks cannot switch configurations fails --interleave
// with a clear error instead of measuring one configuration for all.
func TestInterleaveNeedsForce(t *testing.T) {
	r := runWith(t, AllReduce, plainBackend{}, args(tiny, []string{"-g", "2", "--configs", "Ring/LL/1,Ring/Simple/1", "--interleave"})...)
	if r.code == 0 || !strings.Contains(r.stderr, "--interleave needs a backend") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// plainBackend's ranks are the embedded ones without Force.
type plainBackend struct{ Embedded }

type plainComm struct{ Comm }

func (plainBackend) Init(n int, rc RunConfig) ([]Comm, error) {
	cs, err := Embedded{}.Init(n, rc)
	for i := range cs {
		cs[i] = plainComm{cs[i]}
	}
	return cs, err
}
