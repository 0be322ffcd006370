// oneshot_read.go: the reader's side of the board: fetching peers' posts
// (LL lines or plain), and reading or reducing a round into the output.

package ccl

import (
	"fmt"

	"github.com/gccl/gccl/lib/board"
	"github.com/gccl/gccl/lib/board/layout"
	"github.com/gccl/gccl/lib/prims"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/steptrace"
	"github.com/gccl/gccl/lib/tuning"
)

// fetch copies rank r's lines of round seq from line off into dst,
// waiting for those not there yet.
func (ch *channel) fetch(r int, seq uint64, off int, dst []byte) error {
	if len(dst) == 0 {
		return nil
	}
	b := ch.comm.os.board
	lines := board.Lines(len(dst))
	// A short post is read at once: its few lines are there or it is
	// not. A long one is awaited by its last line first: lines are written
	// in order, so the copy then finds every flag set instead of chasing
	// the writer line by line through its cache (every flag is still
	// checked).
	miss := lines - 1
	if lines <= shortPostLines {
		if miss = b.Get(r, seq, off, dst); miss < 0 {
			return nil
		}
	}
	for {
		line := off + miss
		if b.Arrived(r, seq, line) {
			if miss = b.Get(r, seq, off, dst); miss < 0 {
				return nil
			}
			continue
		}
		ready := func() bool { return b.Arrived(r, seq, line) }
		ch.waiter.For(steptrace.OnFlag, r)
		if err := ch.waiter.SpinWaitKick(ready, ch.comm.os.peers[r].kick, func() string {
			return fmt.Sprintf("rank %d's one-shot post (round %d, line %d) on rank %d", r, seq, line, ch.rank)
		}); err != nil {
			return err
		}
		if miss = b.Get(r, seq, off, dst); miss < 0 {
			return nil
		}
	}
}

// prefetchPosts hints the start of every post this rank reads in round rd
// into its cache, so that the misses of many peers' posts overlap.
func (ch *channel) prefetchPosts(w *collWork, rd oneShotRound) {
	b, me := ch.comm.os.board, ch.rank
	lines := board.Lines(rd.cnt * w.elt)
	line := 0
	switch {
	case w.algo == tuning.TwoShot:
		lo, hi, l := w.twoShotBlock(rd, ch.nRanks, me)
		lines = board.Lines((hi - lo) * w.elt) // the gather's blocks: the same or one shorter
		if !rd.gather {
			line = l
		}
	case w.coll == CollReduceScatter:
		line = me * board.Lines(w.os.roundElems*w.elt)
	}
	for r := 0; r < ch.nRanks; r++ {
		if r != me {
			b.Prefetch(r, rd.seq, line, lines)
		}
	}
}

// shortPostLines: posts of at most this many lines are read without first
// waiting for their last line (fetch).
const shortPostLines = 8

// readRound reads what this rank needs of round rd and writes its output:
// the blocks (allgather), the root's data (broadcast) or the reduction in
// rank order of every rank's post (allreduce, reduce, reducescatter).
func (ch *channel) readRound(w *collWork, rd oneShotRound) error {
	n, me, elt := ch.nRanks, ch.rank, w.elt
	nb := rd.cnt * elt
	if n > 2 && w.coll != CollBroadcast && !w.os.plain {
		ch.prefetchPosts(w, rd)
	}
	switch w.coll {
	case CollAllGather:
		for r := 0; r < n; r++ {
			o := (r*w.count + rd.off) * elt
			dst := w.out[o : o+nb]
			if r == me {
				prims.CopyUnlessSame(dst, w.in[rd.off*elt:rd.off*elt+nb])
				continue
			}
			if err := ch.fetchPost(w, r, rd.seq, dst); err != nil {
				return err
			}
		}
		return nil
	case CollBroadcast:
		return ch.fetchPost(w, w.root, rd.seq, w.out[rd.off*elt:rd.off*elt+nb])
	}
	if w.os.plain {
		return ch.reducePlain(w, rd, w.in[rd.off*elt:rd.off*elt+nb], w.out[rd.off*elt:rd.off*elt+nb])
	}
	if w.algo == tuning.TwoShot {
		return ch.readTwoShot(w, rd)
	}
	line := 0 // where this rank's part starts in each post
	own := w.in[rd.off*elt : rd.off*elt+nb]
	if w.coll == CollReduceScatter {
		line = me * board.Lines(w.os.roundElems*elt)
		o := (me*w.count + rd.off) * elt
		own = w.in[o : o+nb]
	}
	return ch.reduceRound(w, rd, line, own, w.out[rd.off*elt:rd.off*elt+nb])
}

// readTwoShot reads one round of the two-shot: in its first, this rank's
// block of every post, reduced in rank order; in its second, every other
// rank's reduced block.
func (ch *channel) readTwoShot(w *collWork, rd oneShotRound) error {
	n, me, elt := ch.nRanks, ch.rank, w.elt
	if rd.gather {
		for r := 0; r < n; r++ {
			if lo, hi, _ := w.twoShotBlock(rd, n, r); r != me && hi > lo {
				if err := ch.fetch(r, rd.seq, 0, w.out[lo*elt:hi*elt]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	lo, hi, line := w.twoShotBlock(rd, n, me)
	if hi == lo {
		return nil
	}
	return ch.reduceRound(w, rd, line, w.in[lo*elt:hi*elt], w.out[lo*elt:hi*elt])
}

// reduceRound writes into out the reduction, in rank order, of every
// rank's part of round rd: the lines from line on of each post, and this
// rank's own part from own (its input).
func (ch *channel) reduceRound(w *collWork, rd oneShotRound, line int, own, out []byte) error {
	n, me := ch.nRanks, ch.rank
	nb := len(out)
	// This rank's own part is read from its input, not its post, unless
	// the output is its input and an earlier rank's part overwrites it
	// first. The same bits either way: the reduction order does not move.
	if w.inPlace && me != 0 {
		own = nil
	}
	k := w.kernel
	pre := k.Op() == reduce.PreMulSum // every rank's input is scaled, rank 0's too
	if me == 0 && own != nil {
		if pre {
			k.Pre(out, own)
		} else {
			prims.CopyUnlessSame(out, own)
		}
	} else {
		if err := ch.fetch(0, rd.seq, line, out); err != nil {
			return err
		}
		if pre {
			k.Pre(out, out)
		}
	}
	if cap(ch.scratch) < nb {
		ch.scratch = make([]byte, layout.RoundBytes)
	}
	tmp := ch.scratch[:nb]
	for r := 1; r < n; r++ {
		src := own
		if r != me || own == nil {
			if err := ch.fetch(r, rd.seq, line, tmp); err != nil {
				return err
			}
			src = tmp
		}
		k.Reduce(out, out, src, r == n-1)
	}
	return nil
}

// fetchPost copies rank r's post of round seq (from its start) into dst,
// plain or LL lines as w posts.
func (ch *channel) fetchPost(w *collWork, r int, seq uint64, dst []byte) error {
	if !w.os.plain {
		return ch.fetch(r, seq, 0, dst)
	}
	if len(dst) == 0 {
		return nil
	}
	if err := ch.awaitPlain(r, seq); err != nil {
		return err
	}
	copy(dst, ch.comm.os.board.Plain(r, seq, 0, len(dst)))
	return nil
}

// awaitPlain waits for rank r's plain post of round seq.
func (ch *channel) awaitPlain(r int, seq uint64) error {
	b := ch.comm.os.board
	if b.PlainArrived(r, seq) {
		return nil
	}
	ready := func() bool { return b.PlainArrived(r, seq) }
	ch.waiter.For(steptrace.OnFlag, r)
	return ch.waiter.SpinWaitKick(ready, ch.comm.os.peers[r].kick, func() string {
		return fmt.Sprintf("rank %d's one-shot post (round %d, plain) on rank %d", r, seq, ch.rank)
	})
}

// reducePlain is reduceRound over plain posts: it reduces every rank's
// post in rank order straight from the board into out, reading this rank's
// own part from own (its input) unless the output overwrites it first.
// The same bits as over LL lines: the same data, the same order.
func (ch *channel) reducePlain(w *collWork, rd oneShotRound, own, out []byte) error {
	n, me := ch.nRanks, ch.rank
	nb := len(out)
	if w.inPlace && me != 0 {
		own = nil // out is the input: rank 0's part overwrites it first; read the post
	}
	b := ch.comm.os.board
	part := func(r int) ([]byte, error) {
		if r == me && own != nil {
			return own, nil
		}
		if err := ch.awaitPlain(r, rd.seq); err != nil {
			return nil, err
		}
		return b.Plain(r, rd.seq, 0, nb), nil
	}
	k := w.kernel
	p, err := part(0)
	if err != nil {
		return err
	}
	next := 1
	switch {
	case k.Op() == reduce.PreMulSum: // every rank's input is scaled, rank 0's too
		k.Pre(out, p)
	case n == 1:
		prims.CopyUnlessSame(out, p)
	default:
		// The first two parts reduce into out in one pass, not a copy
		// and then a reduction.
		p1, err := part(1)
		if err != nil {
			return err
		}
		k.Reduce(out, p, p1, n == 2)
		next = 2
	}
	for r := next; r < n; r++ {
		if p, err = part(r); err != nil {
			return err
		}
		k.Reduce(out, out, p, r == n-1)
	}
	return nil
}
