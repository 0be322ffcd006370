package perf

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
)

// noopBackend's ranks do nothing: a run on it times the harness's own
// path from the timed loop to a backend's call, the floor under every
// backend's per-call time (the NCCL backend adds its library call).
type noopBackend struct{ Embedded }

type noopRank struct{ rank, size int }

func (noopBackend) Name() BackendName { return "noop" }

func (noopBackend) Init(n int, rc RunConfig) ([]Comm, error) {
	cs := make([]Comm, n)
	for i := range cs {
		cs[i] = &noopRank{rank: i, size: n}
	}
	return cs, nil
}

func (r *noopRank) Rank() int { return r.rank }
func (r *noopRank) Size() int { return r.size }
func (r *noopRank) AllReduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp) error {
	return nil
}
func (r *noopRank) AllGather(send, recv []byte, sendCount int, dt reduce.DataType) error { return nil }
func (r *noopRank) ReduceScatter(send, recv []byte, recvCount int, dt reduce.DataType, op ccl.RedOp) error {
	return nil
}
func (r *noopRank) Broadcast(send, recv []byte, count int, dt reduce.DataType, root int) error {
	return nil
}
func (r *noopRank) Reduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp, root int) error {
	return nil
}
func (r *noopRank) AlltoAll(send, recv []byte, count int, dt reduce.DataType) error { return nil }
func (r *noopRank) Gather(send, recv []byte, count int, dt reduce.DataType, root int) error {
	return nil
}
func (r *noopRank) Scatter(send, recv []byte, count int, dt reduce.DataType, root int) error {
	return nil
}
func (r *noopRank) Send(buf []byte, count int, dt reduce.DataType, peer int) error { return nil }
func (r *noopRank) Recv(buf []byte, count int, dt reduce.DataType, peer int) error { return nil }
func (r *noopRank) GroupStart() error                                              { return nil }
func (r *noopRank) GroupEnd() error                                                { return nil }
func (r *noopRank) Synchronize() error                                             { return nil }
func (r *noopRank) Destroy() error                                                 { return nil }
func (r *noopRank) LastChoice() ccl.Choice                                         { return ccl.Choice{} }

// BenchmarkHarnessPerCall reports the harness's time per operation on
// ranks that do nothing (ns/call), 8 B allreduce, one rank: what the Go
// side adds to each call before a backend's own cost. Compare it with
// nccl-tests' in-place time on one GPU (NCCL does nothing there either).
func BenchmarkHarnessPerCall(b *testing.B) {
	r := runWith(b, AllReduce, noopBackend{}, "-b", "8", "-e", "8", "-n", strconv.Itoa(max(b.N, 1000)), "-w", "100", "-c", "0", "--out-of-place-only")
	if r.code != 0 {
		b.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	rows := dataRows(r.stdout)
	if len(rows) != 1 {
		b.Fatalf("rows %q", rows)
	}
	us, err := strconv.ParseFloat(strings.Fields(rows[0])[5], 64)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(us*1e3, "ns/call")
}
