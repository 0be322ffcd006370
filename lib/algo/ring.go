package algo

import "fmt"

// Prim is one primitive over a channel's connections (NCCL's prims):
// what a rank does with one chunk at one step of a schedule.
type Prim int

const (
	Send               Prim = iota // send the local input (pre-op applied when reducing)
	Recv                           // receive into the output
	RecvReduceSend                 // receive, reduce with the local input, send on
	RecvCopySend                   // receive into the output and send on
	RecvReduceCopySend             // receive, reduce with the local input, write the output, send on
	CopySend                       // copy the local input to the output and send it
	RecvReduceCopy                 // receive, reduce with the local input, write the output
)

var primNames = [...]string{"send", "recv", "recvReduceSend", "recvCopySend", "recvReduceCopySend", "copySend", "recvReduceCopy"}

func (p Prim) String() string {
	if p < 0 || int(p) >= len(primNames) {
		return fmt.Sprintf("Prim(%d)", int(p))
	}
	return primNames[p]
}

// Recvs, Sends, ReadsInput, WritesOutput and Reduces describe what a primitive touches.
func (p Prim) Recvs() bool { return p != Send && p != CopySend }
func (p Prim) Sends() bool { return p != Recv && p != RecvReduceCopy }
func (p Prim) ReadsInput() bool {
	return p == Send || p == CopySend || p == RecvReduceSend || p == RecvReduceCopySend || p == RecvReduceCopy
}
func (p Prim) WritesOutput() bool {
	return p == Recv || p == RecvCopySend || p == RecvReduceCopySend || p == CopySend || p == RecvReduceCopy
}
func (p Prim) Reduces() bool {
	return p == RecvReduceSend || p == RecvReduceCopySend || p == RecvReduceCopy
}

// Step is one primitive on one chunk. For allreduce Chunk is the chunk's
// index within the loop (0..n-1, the same on every rank); for allgather and
// reducescatter it is the rank whose block the chunk belongs to. Post applies
// the post-op (avg's division) to what this step produces.
type Step struct {
	Prim  Prim
	Chunk int
	Post  bool
}

func mod(a, n int) int { return ((a % n) + n) % n }

// RingAllReduce is the per-loop schedule of ring position ix in a ring of n
// (n >= 2): send chunk ix-1; recvReduceSend chunks ix-2 .. ix-(n-1);
// recvReduceCopySend chunk ix (post-op); recvCopySend chunks ix-1 .. ix-(n-2);
// recv chunk ix+1. 2(n-1) steps.
func RingAllReduce(n, ix int) []Step {
	steps := make([]Step, 0, 2*(n-1))
	steps = append(steps, Step{Prim: Send, Chunk: mod(ix-1, n)})
	for j := 2; j < n; j++ {
		steps = append(steps, Step{Prim: RecvReduceSend, Chunk: mod(ix-j, n)})
	}
	steps = append(steps, Step{Prim: RecvReduceCopySend, Chunk: ix, Post: true})
	for j := 1; j < n-1; j++ {
		steps = append(steps, Step{Prim: RecvCopySend, Chunk: mod(ix-j, n)})
	}
	return append(steps, Step{Prim: Recv, Chunk: mod(ix+1, n)})
}

// RingAllGather is the schedule of ring position ix; order is the ring.
// Chunk is the rank owning the block: copySend my block, then receive and
// forward the blocks of the ranks 1..n-2 behind me, then receive the last.
func RingAllGather(order []int, ix int) []Step {
	n := len(order)
	rel := func(k int) int { return order[mod(ix+k, n)] }
	steps := []Step{{Prim: CopySend, Chunk: rel(0)}}
	for j := 1; j < n-1; j++ {
		steps = append(steps, Step{Prim: RecvCopySend, Chunk: rel(n - j)})
	}
	return append(steps, Step{Prim: Recv, Chunk: rel(1)})
}

// RingReduceScatter is the schedule of ring position ix: send the block of
// the rank behind me, reduce and forward n-2 blocks, and finish my own.
func RingReduceScatter(order []int, ix int) []Step {
	n := len(order)
	rel := func(k int) int { return order[mod(ix+k, n)] }
	steps := []Step{{Prim: Send, Chunk: rel(n - 1)}}
	for j := 2; j < n; j++ {
		steps = append(steps, Step{Prim: RecvReduceSend, Chunk: rel(n - j)})
	}
	return append(steps, Step{Prim: RecvReduceCopy, Chunk: rel(0), Post: true})
}

// ChainBroadcast is what ring position ix does with every chunk of a
// broadcast from root along the ring: the root copies and sends, the last
// rank before the root receives, the others receive and forward.
func ChainBroadcast(order []int, ix, root int) Prim {
	n := len(order)
	switch {
	case order[ix] == root:
		return CopySend
	case order[mod(ix+1, n)] == root:
		return Recv
	default:
		return RecvCopySend
	}
}

// ChainReduce is what ring position ix does with every chunk of a reduce to
// root: the rank after the root starts, the root finishes (post-op).
func ChainReduce(order []int, ix, root int) Step {
	n := len(order)
	switch {
	case order[ix] == root:
		return Step{Prim: RecvReduceCopy, Post: true}
	case order[mod(ix-1, n)] == root:
		return Step{Prim: Send}
	default:
		return Step{Prim: RecvReduceSend}
	}
}
