package prims

import (
	"github.com/gccl/gccl/lib/algo"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
)

// TreeEnds are one rank's connections in one tree for one protocol: the
// reduce phase receives from the children and sends to the parent; the
// broadcast phase receives from the parent and sends to the children.
// Absent links are nil.
type TreeEnds struct {
	FromChildren []*proto.RecvEnd // up: partial results of the subtrees
	ToParent     *proto.SendEnd   // up
	FromParent   *proto.RecvEnd   // down: the final result
	ToChildren   []*proto.SendEnd // down
}

// Tree runs NCCL's tree allreduce (the up-down pattern) over the elements
// [off, off+n) of In and Out, in chunks of chunkElems: first every chunk
// is reduced up the tree (receive each child's partial sum, reduce it with
// the local input, send the result to the parent; the root applies the
// post-op and writes the output), then every chunk is broadcast down
// (receive the result from the parent, write it, pass it to the children).
// The phases use separate connections, so ranks at different depths work
// on different chunks at the same time: the pipeline. A rank finishes its
// reduce phase before it starts to broadcast; interleaving the two on one
// goroutine could deadlock a parent waiting on a child's full FIFO.
func (p *Prims) Tree(t *TreeEnds, off, n, chunkElems int) error {
	if p.Trace != nil {
		return p.tracedTree(t, off, n, chunkElems)
	}
	for o := 0; o < n; o += chunkElems {
		if err := p.treeUp(t, off+o, min(chunkElems, n-o)); err != nil {
			return err
		}
	}
	for o := 0; o < n; o += chunkElems {
		if err := p.treeDown(t, off+o, min(chunkElems, n-o)); err != nil {
			return err
		}
	}
	return nil
}

// tracedTree is Tree with every chunk's move up and down recorded as a
// step, named by the primitive NCCL's tree runs there: up, a leaf sends,
// an inner rank receives, reduces and sends, the root receives, reduces
// and writes its output; down, the root sends, an inner rank receives,
// writes and sends, a leaf receives.
func (p *Prims) tracedTree(t *TreeEnds, off, n, chunkElems int) error {
	up, downPrim := treePrims(t)
	parent, child := -1, -1
	if t.ToParent != nil {
		parent = t.ToParent.Peer()
	}
	if len(t.ToChildren) == 1 {
		child = t.ToChildren[0].Peer()
	}
	proto := p.Proto.String()
	for _, down := range []bool{false, true} {
		name, to, from := up.String(), parent, child
		if down {
			name, to, from = downPrim.String(), child, parent
		}
		for o := 0; o < n; o += chunkElems {
			cnt := min(chunkElems, n-o)
			var err error
			if down {
				err = p.treeDown(t, off+o, cnt)
			} else {
				err = p.treeUp(t, off+o, cnt)
			}
			p.Trace.Step(name, proto, to, from, int64(cnt*p.Elt))
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// treePrims are the primitives a rank runs in the tree's two phases.
func treePrims(t *TreeEnds) (up, down algo.Prim) {
	switch {
	case t.ToParent == nil:
		return algo.RecvReduceCopy, algo.Send
	case len(t.FromChildren) == 0:
		return algo.Send, algo.Recv
	default:
		return algo.RecvReduceSend, algo.RecvCopySend
	}
}

// treeUp reduces one chunk into the parent's FIFO, or into the output at
// the root.
func (p *Prims) treeUp(t *TreeEnds, off, n int) error {
	in := p.span(p.In, off, n)
	root := t.ToParent == nil
	nb := n * p.Elt
	if p.Proto != proto.Simple {
		if len(t.FromChildren) == 0 && !root && p.Kernel.Op() != reduce.PreMulSum {
			return p.sendLinesTo(t.ToParent, in) // a leaf sends its input as is
		}
		acc := p.span(p.Out, off, n)
		if !root {
			acc = p.scratch(nb)
		}
		if err := p.reduceChildrenLines(t.FromChildren, acc, in, root); err != nil {
			return err
		}
		if root {
			return nil
		}
		return p.sendLinesTo(t.ToParent, acc)
	}
	var arr [2][]byte
	rbufs := arr[:0]
	for _, r := range t.FromChildren {
		b, err := r.SimpleWait(1, nb)
		if err != nil {
			return err
		}
		rbufs = append(rbufs, b)
	}
	dst := p.span(p.Out, off, n)
	if !root && len(rbufs) == 0 && t.ToParent.F.Direct() && nb >= t.ToParent.F.RefMinBytes() && p.hasHome(algo.Send) {
		// A leaf whose input goes up as is: the parent reads it in place.
		if _, err := t.ToParent.SimpleAcquire(1); err != nil {
			return err
		}
		t.ToParent.SimplePostRef(1, in)
		return nil
	}
	if !root {
		s, err := t.ToParent.SimpleAcquire(1)
		if err != nil {
			return err
		}
		dst = s[:nb]
	}
	p.reduceInto(dst, rbufs, in, root)
	if !root {
		t.ToParent.SimplePost(1, nb)
	}
	for _, r := range t.FromChildren {
		r.SimpleRelease(1)
	}
	return nil
}

// reduceInto sets dst = bufs[0] OP ... OP pre(in), with the post-op when
// post is set. A leaf (no bufs) sends pre(in).
func (p *Prims) reduceInto(dst []byte, bufs [][]byte, in []byte, post bool) {
	switch len(bufs) {
	case 0:
		if post {
			p.Kernel.PrePost(dst, in) // a lone root: only with one rank
		} else {
			p.Kernel.Pre(dst, in)
		}
	default:
		p.Kernel.Reduce(dst, bufs[0], in, post && len(bufs) == 1)
		for i := 1; i < len(bufs); i++ {
			p.Kernel.Combine(dst, bufs[i], dst, post && i == len(bufs)-1)
		}
	}
}

// reduceChildrenLines is reduceInto for LL and LL128: each child's lines
// arrive into scratch, then fold into acc.
func (p *Prims) reduceChildrenLines(from []*proto.RecvEnd, acc, in []byte, post bool) error {
	if len(from) == 0 {
		p.reduceInto(acc, nil, in, post)
		return nil
	}
	for i, r := range from {
		buf := p.scratch2(len(acc))
		if err := p.recvLinesFrom(r, buf); err != nil {
			return err
		}
		last := i == len(from)-1
		if i == 0 {
			p.Kernel.Reduce(acc, buf, in, post && last)
		} else {
			p.Kernel.Combine(acc, buf, acc, post && last)
		}
	}
	return nil
}

// treeDown moves one chunk of the result down: the root sends its output,
// the others receive it from the parent into the output and pass it on.
func (p *Prims) treeDown(t *TreeEnds, off, n int) error {
	out := p.span(p.Out, off, n)
	nb := n * p.Elt
	if p.Proto != proto.Simple {
		if t.FromParent != nil {
			if err := p.recvLinesFrom(t.FromParent, out); err != nil {
				return err
			}
		}
		for _, s := range t.ToChildren {
			if err := p.sendLinesTo(s, out); err != nil {
				return err
			}
		}
		return nil
	}
	src := out
	if t.FromParent != nil {
		b, err := t.FromParent.SimpleWait(1, nb)
		if err != nil {
			return err
		}
		copy(out, b)
		src = b
	}
	for _, s := range t.ToChildren {
		buf, err := s.SimpleAcquire(1)
		if err != nil {
			return err
		}
		if s.F.Direct() && nb >= s.F.RefMinBytes() {
			s.SimplePostRef(1, out) // the child reads the result from our output
			continue
		}
		copy(buf[:nb], src)
		s.SimplePost(1, nb)
	}
	if t.FromParent != nil {
		t.FromParent.SimpleRelease(1)
	}
	return nil
}

func (p *Prims) recvLinesFrom(r *proto.RecvEnd, dst []byte) error {
	if p.Proto == proto.LL {
		return r.LLRecv(dst)
	}
	return r.LL128Recv(dst)
}

func (p *Prims) sendLinesTo(s *proto.SendEnd, data []byte) error {
	if p.Proto == proto.LL {
		return s.LLSend(data)
	}
	return s.LL128Send(data)
}

// scratch2 is a second staging buffer, for a child's lines while the
// first holds the running sum.
func (p *Prims) scratch2(n int) []byte {
	if cap(*p.Scratch2) < n {
		*p.Scratch2 = make([]byte, n)
	}
	return (*p.Scratch2)[:n]
}
