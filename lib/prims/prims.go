// Package prims implements NCCL's primitives over one channel's connections:
// send, recv, recvReduceSend, recvCopySend, recvReduceCopySend, copySend and
// recvReduceCopy. Algorithms call only these; the protocol is a parameter.
//
// A Prims value is owned by one channel goroutine for one work item.
package prims

import (
	"github.com/gccl/gccl/lib/algo"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/steptrace"
)

// Prims moves chunks of a user buffer through at most one receive end (from
// the previous rank) and one send end (to the next rank).
type Prims struct {
	Proto  proto.Protocol
	Recv   *proto.RecvEnd // nil when this rank receives nothing
	Send   *proto.SendEnd // nil when this rank sends nothing
	Kernel *reduce.Kernel // nil for collectives that do not reduce
	Elt    int            // element size in bytes
	In     []byte         // the local input (user send buffer)
	Out    []byte         // the local output (user recv buffer)

	// ChunkSteps and SliceSteps are the Simple protocol's steps per chunk and
	// per slice (4/2 for ring allreduce/allgather/reducescatter, 1/1 otherwise).
	ChunkSteps, SliceSteps int

	// Scratch and Scratch2 stage LL/LL128 payload; owned by the channel,
	// reused. The tree needs the second for a child's lines.
	Scratch, Scratch2 *[]byte

	// Trace, when set, records each primitive call as a step of the
	// channel's current operation.
	Trace *steptrace.Buf
}

// Begin aligns both ends' steps to a chunk so Simple slices never wrap.
func (p *Prims) Begin() {
	if p.Proto != proto.Simple {
		return
	}
	if p.Send != nil {
		p.Send.AlignStep(p.ChunkSteps)
	}
	if p.Recv != nil {
		p.Recv.AlignStep(p.ChunkSteps)
	}
}

// ChunkBytes is the largest chunk one primitive call may move: ChunkSteps
// steps for Simple, one step of payload for LL (half the step) and LL128
// (120/128 of it).
func ChunkBytes(p proto.Protocol, buffSize, chunkSteps int) int {
	if p == proto.Simple {
		return buffSize / proto.Steps * chunkSteps
	}
	return p.StepData(buffSize)
}

// ChunkElems is ChunkBytes in elements, rounded down to the protocol grain.
func ChunkElems(p proto.Protocol, buffSize, chunkSteps, elt int) int {
	g := GrainElems(p, elt)
	return max(ChunkBytes(p, buffSize, chunkSteps)/elt/g*g, g)
}

// GrainElems is the protocol grain in elements (at least one).
func GrainElems(p proto.Protocol, elt int) int { return max(p.Grain()/elt, 1) }

// Do runs prim over nelem elements: the input at element offset inOff, the
// output at outOff. post applies the reduction's post-op (avg).
func (p *Prims) Do(prim algo.Prim, inOff, outOff, nelem int, post bool) error {
	if p.Trace != nil {
		return p.tracedDo(prim, inOff, outOff, nelem, post)
	}
	return p.do(prim, inOff, outOff, nelem, post)
}

// tracedDo is Do, recorded as a step: the primitive, the ranks it sends
// to and receives from, its bytes.
func (p *Prims) tracedDo(prim algo.Prim, inOff, outOff, nelem int, post bool) error {
	err := p.do(prim, inOff, outOff, nelem, post)
	to, from := -1, -1
	if prim.Sends() {
		to = p.Send.Peer()
	}
	if prim.Recvs() {
		from = p.Recv.Peer()
	}
	p.Trace.Step(prim.String(), p.Proto.String(), to, from, int64(nelem*p.Elt))
	return err
}

func (p *Prims) do(prim algo.Prim, inOff, outOff, nelem int, post bool) error {
	if p.Proto == proto.Simple {
		return p.simple(prim, inOff, outOff, nelem, post)
	}
	return p.lines(prim, inOff, outOff, nelem, post)
}

func (p *Prims) span(buf []byte, off, n int) []byte {
	return buf[off*p.Elt : (off+n)*p.Elt]
}

// simple moves a chunk in ChunkSteps/SliceSteps slices, reading from and
// writing to the FIFO slots in place (no staging copy). On a Direct FIFO a
// slice whose bytes already sit in the rank's own buffers (the input it
// sends as is, the output it just wrote) is posted by reference: the
// receiver reads it from there, one copy fewer on each side (End waits
// until the receiver is done with it).
func (p *Prims) simple(prim algo.Prim, inOff, outOff, nelem int, post bool) error {
	slices := p.ChunkSteps / p.SliceSteps
	var stepBytes int
	if p.Send != nil {
		stepBytes = p.Send.F.StepBytes
	} else {
		stepBytes = p.Recv.F.StepBytes
	}
	direct := prim.Sends() && p.Send.F.Direct() && p.hasHome(prim)
	sliceElems := stepBytes * p.SliceSteps / p.Elt
	size := algo.SliceSize(nelem, slices, sliceElems)
	// Trailing empty slices move nothing: this end and its peer, which
	// slice the chunk alike, both skip them.
	slices = algo.SlicesUsed(nelem, slices, sliceElems)
	lands := prim.Recvs() && !prim.Reduces() && prim.WritesOutput()
	if lands && p.Recv.F.Proxied() {
		// Every slice of the chunk is copied to the output as is: show a
		// network proxy where, so it reads each off the socket straight
		// there, however far ahead of this goroutine it runs.
		for s := 0; s < slices; s++ {
			off := min(s*size, nelem)
			p.Recv.SimpleExpectAhead(s*p.SliceSteps, p.span(p.Out, outOff+off, min(size, nelem-off)))
		}
	}
	for s := 0; s < slices; s++ {
		off := min(s*size, nelem)
		n := min(size, nelem-off)
		nb := n * p.Elt
		var rbuf, sbuf, in, out []byte
		var err error
		if prim.Recvs() {
			if lands {
				// The slice is copied to the output as is: a network
				// proxy may read it off the socket straight there.
				rbuf, err = p.Recv.SimpleWaitInto(p.SliceSteps, p.span(p.Out, outOff+off, n))
			} else {
				rbuf, err = p.Recv.SimpleWait(p.SliceSteps, nb)
			}
			if err != nil {
				return err
			}
		}
		if prim.Sends() {
			if sbuf, err = p.Send.SimpleAcquire(p.SliceSteps); err != nil {
				return err
			}
			sbuf = sbuf[:nb]
		}
		if prim.ReadsInput() {
			in = p.span(p.In, inOff+off, n)
		}
		if prim.WritesOutput() {
			out = p.span(p.Out, outOff+off, n)
		}
		if direct && nb >= p.Send.F.RefMinBytes() {
			// The home is the input (send, copySend) or the output the
			// primitive writes (recvCopySend, recvReduceCopySend).
			if prim != algo.Send {
				p.compute(prim, rbuf, in, out, nil, post)
			}
			home := out
			if prim == algo.Send || prim == algo.CopySend {
				home = in
			}
			p.Send.SimplePostRef(p.SliceSteps, home)
		} else {
			p.compute(prim, rbuf, in, out, sbuf, post)
			if prim.Sends() {
				p.Send.SimplePost(p.SliceSteps, nb)
			}
		}
		if prim.Recvs() {
			p.Recv.SimpleRelease(p.SliceSteps)
		}
	}
	return nil
}

// hasHome reports whether what prim sends is already in the rank's own
// buffers: its input as is (no pre-op to apply), or the output it writes.
// recvReduceSend's partial result has no home but the slot.
func (p *Prims) hasHome(prim algo.Prim) bool {
	switch prim {
	case algo.Send:
		return p.Kernel == nil || p.Kernel.Op() != reduce.PreMulSum
	case algo.CopySend, algo.RecvCopySend, algo.RecvReduceCopySend:
		return true
	}
	return false
}

// End waits until every receiver is done with the slices this rank posted
// by reference (Direct FIFOs), so its buffers may change hands: the last
// thing a rank does in an operation. t is the tree's links, or nil.
func (p *Prims) End(t *TreeEnds) error {
	if p.Send != nil {
		if err := p.Send.Drain(); err != nil {
			return err
		}
	}
	if t == nil {
		return nil
	}
	if t.ToParent != nil {
		if err := t.ToParent.Drain(); err != nil {
			return err
		}
	}
	for _, s := range t.ToChildren {
		if err := s.Drain(); err != nil {
			return err
		}
	}
	return nil
}

// compute produces prim's result from the received data and the local input
// into the output and/or the send slot. Where it writes both, it works in
// blocks small enough for the first write to be read back from L1
// (fuseBlock): one pass over memory, not two.
func (p *Prims) compute(prim algo.Prim, rbuf, in, out, sbuf []byte, post bool) {
	switch {
	case prim.Reduces():
		if out == nil {
			p.Kernel.Reduce(sbuf, rbuf, in, post)
			return
		}
		if sbuf == nil {
			p.Kernel.Reduce(out, rbuf, in, post)
			return
		}
		blk := fuseBlock / p.Elt * p.Elt
		for o := 0; o < len(out); o += blk {
			e := min(o+blk, len(out))
			p.Kernel.Reduce(out[o:e], rbuf[o:e], in[o:e], post)
			copy(sbuf[o:e], out[o:e])
		}
	case prim.Recvs():
		if out == nil || sbuf == nil {
			CopyUnlessSame(out, rbuf) // at most one of them is set; rbuf may be out (landed)
			copy(sbuf, rbuf)
			return
		}
		copyTwice(out, sbuf, rbuf)
	case prim == algo.CopySend:
		if sbuf == nil || (len(out) > 0 && len(in) > 0 && &out[0] == &in[0]) {
			CopyUnlessSame(out, in) // posted by reference, or in place
			copy(sbuf, in)
			return
		}
		copyTwice(out, sbuf, in)
	default: // Send
		if p.Kernel != nil {
			p.Kernel.Pre(sbuf, in)
		} else {
			copy(sbuf, in)
		}
	}
}

// fuseBlock is the block compute works in when it writes two places: half
// of a 32 KiB L1 data cache, so the block's source stays there for the
// second write.
const fuseBlock = 16 << 10

// copyTwice copies src to a and b (of src's length) in one pass, block by
// block.
func copyTwice(a, b, src []byte) {
	for o := 0; o < len(src); o += fuseBlock {
		e := min(o+fuseBlock, len(src))
		copy(a[o:e], src[o:e])
		copy(b[o:e], src[o:e])
	}
}

// CopyUnlessSame copies src to dst unless they are the same memory (in place).
func CopyUnlessSame(dst, src []byte) {
	if len(dst) > 0 && len(src) > 0 && &dst[0] == &src[0] {
		return
	}
	copy(dst, src)
}

// lines moves a chunk as one LL or LL128 step, staging through scratch only
// where the received data has no home in the output.
func (p *Prims) lines(prim algo.Prim, inOff, outOff, nelem int, post bool) error {
	nb := nelem * p.Elt
	var in, out, data []byte
	if prim.ReadsInput() {
		in = p.span(p.In, inOff, nelem)
	}
	if prim.WritesOutput() {
		out = p.span(p.Out, outOff, nelem)
	}
	if prim.Recvs() {
		rbuf := out
		if prim.Reduces() || rbuf == nil {
			rbuf = p.scratch(nb)
		}
		if err := p.recvLines(rbuf); err != nil {
			return err
		}
		data = rbuf
		if prim.Reduces() {
			dst := out
			if dst == nil {
				dst = rbuf
			}
			p.Kernel.Reduce(dst, rbuf, in, post)
			data = dst
		}
	} else {
		data = in
		if prim == algo.CopySend {
			CopyUnlessSame(out, in)
		} else if p.Kernel != nil && p.Kernel.Op() == reduce.PreMulSum {
			data = p.scratch(nb)
			p.Kernel.Pre(data, in)
		}
	}
	if prim.Sends() {
		return p.sendLines(data)
	}
	return nil
}

func (p *Prims) scratch(n int) []byte {
	if cap(*p.Scratch) < n {
		*p.Scratch = make([]byte, n)
	}
	return (*p.Scratch)[:n]
}

func (p *Prims) recvLines(dst []byte) error {
	if p.Proto == proto.LL {
		return p.Recv.LLRecv(dst)
	}
	return p.Recv.LL128Recv(dst)
}

func (p *Prims) sendLines(data []byte) error {
	if p.Proto == proto.LL {
		return p.Send.LLSend(data)
	}
	return p.Send.LL128Send(data)
}
