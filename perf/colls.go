package perf

import (
	"fmt"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/reduce"
)

// Test describes one perf binary: its collective, its buffer geometry and
// bandwidth formulas (DESIGN.md section 6), how to run it and what each
// rank's output must be.
type Test struct {
	Prog       string // program name printed in the header: all_reduce_perf
	Collective string // name in result records: allreduce
	Reduces    bool   // has a reduction op (-o applies)
	Rooted     bool   // has a root (-r applies)
	// blocks: how many param-count blocks the send and recv buffers hold
	// (param count = the per-rank count the call takes). "n" means nRanks.
	sendBlocks, recvBlocks func(n int) int
	// In place, send and recv are views of the recv buffer at these offsets,
	// in param-count blocks times the rank (nccl-tests' in-place offsets).
	sendInPlace, recvInPlace int
	// algBlocks is the number of param-count blocks algBw counts.
	algBlocks func(n int) int
	busFactor func(n int) float64
	// naInPlace: the in-place result is not checked (#wrong N/A).
	naInPlace bool
	// inPlaceStage: in place, each rank's receives land in a staging
	// buffer as large as its output (rankBuffers counts them).
	inPlaceStage stageKind
	// check rejects rank counts the test cannot run (hypercube).
	check func(n int) error
	run   func(c Comm, a callArgs) error
	// fill writes rank r's input into send; want writes its expected
	// output (nil when rank r has none to check).
	fill func(a dataArgs, send []byte)
	want func(a dataArgs) []byte
	// sizes, when set, replaces the block geometry (sendBlocks, recvBlocks,
	// algBlocks) for a collective whose per-peer sizes vary (alltoallv).
	sizes sizer
	// bind, when set, returns the Test a run uses, built from its options
	// and environment (alltoallv's traffic pattern) before anything runs.
	bind func(o *Options, n int) (*Test, error)
}

// stageKind is how a Test stages in-place receives.
type stageKind int

const (
	stageNone stageKind = iota
	stageKept           // one buffer per rank for the run (alltoallv's traffic.staging)
	// stagePerCall: one per call, allocated when the call is enqueued and
	// held until the operation finishes (lib/ccl's AlltoAll, on the
	// embedded stack): as many as the operations in flight.
	stagePerCall
)

// inPlaceStages is how many staging buffers of up to -e bytes a rank
// may hold at once in place, with agg calls per operation and up to
// inFlight operations enqueued and not finished: those in use and one
// that is garbage a collection has not yet returned (the kept one grows
// with the sizes, leaving its smaller predecessor behind).
func (t *Test) inPlaceStages(agg, inFlight int) int {
	switch t.inPlaceStage {
	case stageKept:
		return 2
	case stagePerCall:
		return max(agg, 1)*inFlight + 1
	}
	return 0
}

// sizer is the geometry of a collective whose buffers are not a whole
// number of param-count blocks.
type sizer interface {
	// counts is Test.Counts.
	counts(size int64, elt, n int) (param int, rowBytes int64)
	// bufBytes are the bytes of one call's send and recv buffers.
	bufBytes(param, elt, n int) (send, recv int)
	// algBytes are the bytes algBw counts.
	algBytes(param, elt, n int) int64
}

// callArgs is one call: buffers as the call sees them.
type callArgs struct {
	send, recv []byte
	count      int // param count
	dt         reduce.DataType
	op         ccl.RedOp
	root       int
}

// dataArgs identifies the data of one check.
type dataArgs struct {
	dt    reduce.DataType
	op    reduce.Op
	seed  uint64
	rank  int
	n     int
	count int // param count
	root  int
	// expect, when set, is the rank's buffer for want's result (allocated
	// with its send and recv): checks then make no garbage that a
	// collection must catch up with (limitMemory counts it once).
	expect []byte
}

// wantBuf is n bytes for want's result: the rank's expected-values
// buffer, or a new one.
func (a dataArgs) wantBuf(n int) []byte {
	if n <= len(a.expect) {
		return a.expect[:n]
	}
	return make([]byte, n)
}

func one(int) int        { return 1 }
func all(n int) int      { return n }
func ring(n int) float64 { return float64(n-1) / float64(n) }
func unit(int) float64   { return 1 }

// Counts returns the param count (elements per call) for a size in bytes,
// and the byte size the row reports, as nccl-tests' getCollByteCount: the
// size column is the total data of the larger buffer.
func (t *Test) Counts(size int64, elt, n int) (param int, rowBytes int64) {
	if t.sizes != nil {
		return t.sizes.counts(size, elt, n)
	}
	count := size / int64(elt)
	blocks := max(t.sendBlocks(n), t.recvBlocks(n))
	param = int(count / int64(blocks))
	return param, int64(param) * int64(blocks) * int64(elt)
}

// BusBw converts a time for a param count into algBw and busBw in GB/s.
func (t *Test) BusBw(param, elt, n int, sec float64) (algBw, busBw float64) {
	if sec <= 0 {
		return 0, 0
	}
	var bytes float64
	if t.sizes != nil {
		bytes = float64(t.sizes.algBytes(param, elt, n))
	} else {
		bytes = float64(param) * float64(elt) * float64(t.algBlocks(n))
	}
	algBw = bytes / sec / 1e9
	return algBw, algBw * t.busFactor(n)
}

// bufLens are the bytes of one call's send and recv buffers.
func (t *Test) bufLens(param, elt, n int) (send, recv int) {
	if t.sizes != nil {
		return t.sizes.bufBytes(param, elt, n)
	}
	b := param * elt
	return b * t.sendBlocks(n), b * t.recvBlocks(n)
}

func plainFill(a dataArgs, buf []byte, rank, first int) {
	exact.FillPlain(buf[:a.count*a.dt.Size()], a.dt, a.seed, rank, first, a.count)
}

func reduceFill(a dataArgs, buf []byte, first, count int) {
	exact.Fill(buf[:count*a.dt.Size()], a.dt, a.op, a.seed, a.rank, a.n, first, count)
}

func expected(a dataArgs, first, count int) []byte {
	out := a.wantBuf(count * a.dt.Size())
	exact.Expected(out, a.dt, a.op, a.seed, a.n, first, count)
	return out
}

// blocksOf concatenates per-block plain data: block p from rank(p), at index first(p).
func blocksOf(a dataArgs, nBlocks int, rank, first func(p int) int) []byte {
	b := a.count * a.dt.Size()
	out := a.wantBuf(nBlocks * b)
	for p := 0; p < nBlocks; p++ {
		plainFill(a, out[p*b:], rank(p), first(p))
	}
	return out
}

// The tests, one per binary.
var (
	AllReduce = &Test{
		Prog: "all_reduce_perf", Collective: "allreduce", Reduces: true,
		sendBlocks: one, recvBlocks: one, algBlocks: one,
		busFactor: func(n int) float64 { return 2 * float64(n-1) / float64(n) },
		run:       func(c Comm, a callArgs) error { return c.AllReduce(a.send, a.recv, a.count, a.dt, a.op) },
		fill:      func(a dataArgs, send []byte) { reduceFill(a, send, 0, a.count) },
		want:      func(a dataArgs) []byte { return expected(a, 0, a.count) },
	}
	AllGather = &Test{
		Prog: "all_gather_perf", Collective: "allgather",
		sendBlocks: one, recvBlocks: all, algBlocks: all, busFactor: ring, sendInPlace: 1,
		run:  func(c Comm, a callArgs) error { return c.AllGather(a.send, a.recv, a.count, a.dt) },
		fill: func(a dataArgs, send []byte) { plainFill(a, send, a.rank, 0) },
		want: func(a dataArgs) []byte {
			return blocksOf(a, a.n, func(p int) int { return p }, func(int) int { return 0 })
		},
	}
	ReduceScatter = &Test{
		Prog: "reduce_scatter_perf", Collective: "reducescatter", Reduces: true,
		sendBlocks: all, recvBlocks: one, algBlocks: all, busFactor: ring, recvInPlace: 1,
		run:  func(c Comm, a callArgs) error { return c.ReduceScatter(a.send, a.recv, a.count, a.dt, a.op) },
		fill: func(a dataArgs, send []byte) { reduceFill(a, send, 0, a.n*a.count) },
		want: func(a dataArgs) []byte { return expected(a, a.rank*a.count, a.count) },
	}
	Broadcast = &Test{
		Prog: "broadcast_perf", Collective: "broadcast", Rooted: true,
		sendBlocks: one, recvBlocks: one, algBlocks: one, busFactor: unit,
		run: func(c Comm, a callArgs) error { return c.Broadcast(a.send, a.recv, a.count, a.dt, a.root) },
		fill: func(a dataArgs, send []byte) {
			if a.rank == a.root {
				plainFill(a, send, a.root, 0)
			}
		},
		want: func(a dataArgs) []byte {
			return blocksOf(a, 1, func(int) int { return a.root }, func(int) int { return 0 })
		},
	}
	Reduce = &Test{
		Prog: "reduce_perf", Collective: "reduce", Reduces: true, Rooted: true,
		sendBlocks: one, recvBlocks: one, algBlocks: one, busFactor: unit,
		run:  func(c Comm, a callArgs) error { return c.Reduce(a.send, a.recv, a.count, a.dt, a.op, a.root) },
		fill: func(a dataArgs, send []byte) { reduceFill(a, send, 0, a.count) },
		want: func(a dataArgs) []byte {
			if a.rank != a.root {
				return nil
			}
			return expected(a, 0, a.count)
		},
	}
	AlltoAll = &Test{
		Prog: "alltoall_perf", Collective: "alltoall",
		sendBlocks: all, recvBlocks: all, algBlocks: all, busFactor: ring, naInPlace: true, inPlaceStage: stagePerCall,
		run: func(c Comm, a callArgs) error { return c.AlltoAll(a.send, a.recv, a.count, a.dt) },
		fill: func(a dataArgs, send []byte) {
			b := a.count * a.dt.Size()
			for p := 0; p < a.n; p++ {
				plainFill(a, send[p*b:], a.rank, p*a.count)
			}
		},
		want: func(a dataArgs) []byte {
			return blocksOf(a, a.n, func(p int) int { return p }, func(int) int { return a.rank * a.count })
		},
	}
	Gather = &Test{
		Prog: "gather_perf", Collective: "gather", Rooted: true,
		sendBlocks: one, recvBlocks: all, algBlocks: all, busFactor: ring, sendInPlace: 1,
		run:  func(c Comm, a callArgs) error { return c.Gather(a.send, a.recv, a.count, a.dt, a.root) },
		fill: func(a dataArgs, send []byte) { plainFill(a, send, a.rank, 0) },
		want: func(a dataArgs) []byte {
			if a.rank != a.root {
				return nil
			}
			return blocksOf(a, a.n, func(p int) int { return p }, func(int) int { return 0 })
		},
	}
	Scatter = &Test{
		Prog: "scatter_perf", Collective: "scatter", Rooted: true,
		sendBlocks: all, recvBlocks: one, algBlocks: all, busFactor: ring, recvInPlace: 1,
		run: func(c Comm, a callArgs) error { return c.Scatter(a.send, a.recv, a.count, a.dt, a.root) },
		fill: func(a dataArgs, send []byte) {
			if a.rank != a.root {
				return
			}
			b := a.count * a.dt.Size()
			for p := 0; p < a.n; p++ {
				plainFill(a, send[p*b:], a.root, p*a.count)
			}
		},
		want: func(a dataArgs) []byte {
			return blocksOf(a, 1, func(int) int { return a.root }, func(int) int { return a.rank * a.count })
		},
	}
	SendRecv = &Test{
		Prog: "sendrecv_perf", Collective: "sendrecv",
		sendBlocks: one, recvBlocks: one, algBlocks: one, busFactor: unit, naInPlace: true,
		run: func(c Comm, a callArgs) error {
			n, r := c.Size(), c.Rank()
			if err := c.GroupStart(); err != nil {
				return err
			}
			err := c.Send(a.send, a.count, a.dt, (r+1)%n)
			if err == nil {
				err = c.Recv(a.recv, a.count, a.dt, (r-1+n)%n)
			}
			if endErr := c.GroupEnd(); err == nil {
				err = endErr
			}
			return err
		},
		fill: func(a dataArgs, send []byte) { plainFill(a, send, a.rank, 0) },
		want: func(a dataArgs) []byte {
			return blocksOf(a, 1, func(int) int { return (a.rank - 1 + a.n) % a.n }, func(int) int { return 0 })
		},
	}
	Hypercube = &Test{
		Prog: "hypercube_perf", Collective: "hypercube",
		sendBlocks: one, recvBlocks: all, busFactor: unit, sendInPlace: 1,
		algBlocks: func(n int) int { return n - 1 },
		check: func(n int) error {
			if n&(n-1) != 0 {
				return usagef("hypercube_perf needs a power-of-two number of ranks (recursive doubling); got %d ranks: use -t/-g so that t x g is 1, 2, 4, 8, ...", n)
			}
			return nil
		},
		run:  runHypercube,
		fill: func(a dataArgs, send []byte) { plainFill(a, send, a.rank, 0) },
		want: func(a dataArgs) []byte {
			return blocksOf(a, a.n, func(p int) int { return p }, func(int) int { return 0 })
		},
	}
)

// runHypercube is a recursive-doubling allgather over send/recv: copy the
// own block into place, then at step k exchange the 2^k blocks gathered so
// far with the rank that differs in bit k.
func runHypercube(c Comm, a callArgs) error {
	n, r := c.Size(), c.Rank()
	b := a.count * a.dt.Size()
	step := func(send, recv []byte, count, peer int) error {
		if err := c.GroupStart(); err != nil {
			return err
		}
		err := c.Send(send, count, a.dt, peer)
		if err == nil {
			err = c.Recv(recv, count, a.dt, peer)
		}
		if endErr := c.GroupEnd(); err == nil {
			err = endErr
		}
		return err
	}
	if !sameStart(a.send, a.recv[r*b:]) {
		if err := step(a.send[:b], a.recv[r*b:(r+1)*b], a.count, r); err != nil {
			return err
		}
	}
	for mask := 1; mask < n; mask <<= 1 {
		mine := r &^ (mask - 1)
		theirs := mine ^ mask
		if err := step(a.recv[mine*b:(mine+mask)*b], a.recv[theirs*b:(theirs+mask)*b], mask*a.count, r^mask); err != nil {
			return err
		}
	}
	return nil
}

func sameStart(a, b []byte) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

// Tests lists every test by program name.
var Tests = []*Test{AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AlltoAll, AlltoAllv, Gather, Scatter, SendRecv, Hypercube}

func (t *Test) String() string { return fmt.Sprintf("%s (%s)", t.Prog, t.Collective) }
