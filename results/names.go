package results

import (
	"fmt"
	"path"
	"strings"
)

// ncclTest names one nccl-tests test three ways.
type ncclTest struct {
	test       string // binary stem: all_reduce (all_reduce_perf, all_reduce_perf_mpi)
	collective string // Record.Collective
	testColl   string // nccl-tests' testColl name, written as experiment_name
	reduces    bool   // has a reduction operator; otherwise Record.Op is "none"
}

// ncclTests is ordered so that a longer test name is tried before a shorter
// one it contains (all_reduce and reduce_scatter before reduce, alltoallv
// before alltoall, alltoall and all_gather before gather, ...).
var ncclTests = []ncclTest{
	{test: "all_reduce", collective: "allreduce", testColl: "AllReduce", reduces: true},
	{test: "reduce_scatter", collective: "reducescatter", testColl: "ReduceScatter", reduces: true},
	{test: "all_gather", collective: "allgather", testColl: "AllGather"},
	{test: "alltoallv", collective: "alltoallv", testColl: "AlltoAllv"},
	{test: "alltoall", collective: "alltoall", testColl: "AlltoAll"},
	{test: "broadcast", collective: "broadcast", testColl: "Broadcast"},
	{test: "hypercube", collective: "hypercube", testColl: "HyperCube"},
	{test: "sendrecv", collective: "sendrecv", testColl: "SendRecv"},
	{test: "scatter", collective: "scatter", testColl: "Scatter"},
	{test: "gather", collective: "gather", testColl: "Gather"},
	{test: "reduce", collective: "reduce", testColl: "Reduce", reduces: true},
}

// squash lower-cases s and drops '_' and '-', so that "all_reduce",
// "AllReduce" and "allreduce" compare equal.
func squash(s string) string {
	s = strings.ToLower(s)
	s = strings.ReplaceAll(s, "_", "")
	return strings.ReplaceAll(s, "-", "")
}

// programStem strips a program or test name to its stem: the path, then
// ".exe", "_mpi" and "_perf" ("/build/all_reduce_perf_mpi" -> "all_reduce");
// perf says whether "_perf" was there.
func programStem(name string) (stem string, perf bool) {
	base := path.Base(strings.ReplaceAll(strings.TrimSpace(name), `\`, "/"))
	base = strings.TrimSuffix(base, ".exe")
	base = strings.TrimSuffix(base, "_mpi")
	stem, perf = strings.CutSuffix(base, "_perf")
	if stem == "." || stem == "/" {
		stem = ""
	}
	return stem, perf
}

// testByName finds a test from a test program name ("all_reduce_perf",
// "/opt/nccl-tests/build/all_reduce_perf_mpi"), an experiment name
// ("AllReduce") or a collective ("allreduce"), ignoring case and '_'.
func testByName(name string) (ncclTest, bool) {
	stem, _ := programStem(name)
	want := squash(stem)
	for _, t := range ncclTests {
		if want == t.collective {
			return t, true
		}
	}
	return ncclTest{}, false
}

// testOrUnknown is testByName, except that a name it does not know (a test
// such as bisection_perf) still names the collective: its stem without '_'
// ("bisection"), keeping the printed redop. With
// requirePerf, only program names ending "_perf" (or "_perf_mpi") qualify.
func testOrUnknown(name string, requirePerf bool) (ncclTest, bool) {
	if t, ok := testByName(name); ok {
		return t, true
	}
	stem, perf := programStem(name)
	if squash(stem) == "" || (requirePerf && !perf) {
		// "_perf" or "-_perf" names no collective: a record needs one.
		return ncclTest{}, false
	}
	return ncclTest{test: stem, collective: squash(stem), testColl: stem, reduces: true}, true
}

// testInText finds a test whose name appears inside s (a file name such as
// "h200x2_all_reduce_perf.txt"); the longest match wins by table order.
func testInText(s string) (ncclTest, bool) {
	s = strings.ToLower(path.Base(strings.ReplaceAll(s, `\`, "/")))
	for _, t := range ncclTests {
		if strings.Contains(s, t.test) {
			return t, true
		}
	}
	return ncclTest{}, false
}

// testByCollective finds the test of a Record.Collective.
func testByCollective(coll string) (ncclTest, bool) {
	for _, t := range ncclTests {
		if t.collective == coll {
			return t, true
		}
	}
	return ncclTest{}, false
}

// normalizeOp returns Record.Op for a test's redop column: "none" for
// collectives that do not reduce (nccl-tests prints "sum" for sendrecv).
func normalizeOp(t ncclTest, redop string) string {
	if !t.reduces {
		return "none"
	}
	return redop
}

// SizeLabel writes a byte count the way sizes are given on command lines:
// 4M, 512K, 1G when it divides evenly, else the plain number.
func SizeLabel(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}
