// oneshot_post.go: the poster's side of the board: posting a round (at
// enqueue when it can), the acknowledgements it waits for, and waking the
// readers.

package ccl

import (
	"github.com/gccl/gccl/lib/board"
)

// tryPrePost posts round 0 of a one-shot collective on the calling
// goroutine at enqueue, when nothing of this communicator is in flight
// (the stream order is then kept: every earlier operation has finished
// with the buffers) and the slot is free without waiting.
func (c *Comm) tryPrePost(w *collWork) {
	if c.finished.Load() != c.enqueued-1 || !w.posts(c.rank) {
		return
	}
	if !c.slotFree(w.os.seq) {
		return
	}
	c.postRound(w, w.oneShotRound(0))
	w.os.prePosted = true
}

// minAcked is the least round every other rank has acknowledged.
func (c *Comm) minAcked() uint64 {
	b := c.os.board
	m := ^uint64(0)
	for r := 0; r < c.Size(); r++ {
		if r != c.rank {
			m = min(m, b.Acked(r))
		}
	}
	return m
}

// postRound writes this rank's input of round rd on the board and wakes
// the ranks that read it.
func (c *Comm) postRound(w *collWork, rd oneShotRound) {
	b, me, elt := c.os.board, c.rank, w.elt
	lines := 0
	if rd.gather { // the two-shot's reduced block
		lo, hi, _ := w.twoShotBlock(rd, c.Size(), me)
		b.Put(me, rd.seq, 0, w.out[lo*elt:hi*elt])
		lines = board.Lines((hi - lo) * elt)
	} else if w.coll == CollReduceScatter {
		seg := board.Lines(w.os.roundElems * elt)
		for blk := 0; blk < c.Size(); blk++ {
			o := (blk*w.count + rd.off) * elt
			b.Put(me, rd.seq, blk*seg, w.in[o:o+rd.cnt*elt])
		}
		lines = (c.Size()-1)*seg + board.Lines(rd.cnt*elt)
	} else if w.os.plain {
		b.PutPlain(me, rd.seq, 0, w.in[rd.off*elt:(rd.off+rd.cnt)*elt])
		b.PublishPlain(me, rd.seq)
		c.wakeReaders(w)
		c.os.wakeOwed = w
		return
	} else {
		b.Put(me, rd.seq, 0, w.in[rd.off*elt:(rd.off+rd.cnt)*elt])
		lines = board.Lines(rd.cnt * elt)
	}
	b.Publish(me, rd.seq, lines)
	// A reader asleep already is woken now; one falling asleep as the
	// lines go out is the business of settleWakes, after a barrier.
	c.wakeReaders(w)
	c.os.wakeOwed = w
}

// wakeReaders wakes the ranks that read this rank's posts of w and are
// asleep. Only after a full barrier that follows the posts is it the
// poster's half of the Dekker pair with a reader going to sleep.
func (c *Comm) wakeReaders(w *collWork) {
	if w.coll == CollReduce { // the root alone reads
		if w.root != c.rank {
			c.os.peers[w.root].waiter.Wake()
		}
		return
	}
	// Every other rank reads (in a broadcast only the root posts, and
	// every other rank reads it).
	for _, p := range c.os.others {
		p.Wake()
	}
}

// settleWakes ends a post: with fenced, it makes the full barrier itself
// (else its caller has just made one: a CAS), then wakes the post's
// sleeping readers. It runs before the poster waits for anything, so no
// reader that went to sleep as the post went out is left asleep. Leaving
// the barrier until then lets this core's wait for its stores to leave
// (they evict the readers' copies of the lines) overlap its own reads.
func (c *Comm) settleWakes(fenced bool) {
	s := c.os
	if s == nil || s.wakeOwed == nil {
		return
	}
	if fenced {
		s.barrier.Add(1)
	}
	w := s.wakeOwed
	s.wakeOwed = nil
	c.wakeReaders(w)
}
