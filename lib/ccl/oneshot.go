package ccl

import (
	"fmt"
	"sync/atomic"

	"github.com/gccl/gccl/lib/board"
	"github.com/gccl/gccl/lib/board/layout"
	"github.com/gccl/gccl/lib/prims"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/tuning"
)

// The one-shot algorithm (tuning.OneShot): every rank posts its input once
// on the world's board (lib/board) and every rank that needs a result
// reads every post it needs and computes the result itself, reducing in
// rank order, so every rank gets the same bits. One hop instead of a
// ring's 2(n-1). It runs as channel 0's only work, on whichever goroutine
// drains channel 0 (usually the caller's Synchronize); when nothing is in
// flight the caller posts the first round while it enqueues (launch), so a
// thread that drives several ranks finds every post there when it
// synchronizes them one by one.
//
// The two-shot allreduce (tuning.TwoShot) runs on the same board in two of
// its rounds per round: every rank posts its input; rank b reduces block b
// of every post in rank order and posts the result; every rank reads every
// reduced block. The same bits as the one-shot (rank b reduces in the same
// order), two hops instead of one, and each rank reads about twice its
// buffer instead of every rank's.
//
// Large operations run in rounds of at most layout.RoundBytes per rank.
// Every rank acknowledges every round it took part in, whether it read or
// not, and posts round s only once every rank has acknowledged round
// s-Slots, the last user of that slot: no clean-up pass, no lost post.

// oneShotState is a communicator's side of the board. seq is written by
// the calling goroutine when it plans (rounds handed out in stream order);
// posted and minAcked by whoever posts: the caller at enqueue while nothing
// is in flight, else the runner of channel 0. The hand-over between the
// two goes through the plan's posting and c.finished (atomics).
type oneShotState struct {
	board    *board.Board
	seq      uint64 // rounds handed out so far
	minAcked uint64 // every peer had acknowledged at least this round when last looked
	// wakeOwed: a round was posted and its readers not yet looked at after
	// a full barrier (settleWakes). Owned like posted.
	wakeOwed *collWork
	// barrier is a word only this rank's poster touches: an atomic add on
	// it is the poster's full barrier (a locked instruction on a line no
	// other core holds).
	barrier atomic.Uint64
	// peers[r] wakes and kicks rank r's channel 0: the goroutine that may
	// wait for this rank's posts and acknowledgements.
	peers []peerSignal
	// others is every peer's waiter but this rank's own, in rank order.
	others []*proto.Waiter
}

type peerSignal struct {
	waiter *proto.Waiter
	kick   func()
}

// oneShotWork is what a one-shot collective's work adds to collWork.
type oneShotWork struct {
	seq        uint64 // the first round's sequence
	rounds     int
	roundElems int  // elements per round (per block for reducescatter)
	prePosted  bool // the caller posted round 0 at enqueue
	plain      bool // posts are plain (board.PutPlain), not LL lines: plainPosts
}

// plainPosts reports whether a one-shot collective of count elements of
// elt bytes, roundElems a round, posts plain payloads rather than LL
// lines: the one-shot (not the two-shot) allreduce, reduce, allgather and
// broadcast, from plainMinBytes a post on. Every rank decides alike, from
// the operation alone.
func plainPosts(coll Coll, a tuning.Algo, count, roundElems, elt int) bool {
	if a != tuning.OneShot || coll == CollReduceScatter {
		return false
	}
	return int64(min(count, roundElems)*elt) >= plainMinBytes.Load()
}

// plainMinBytes is the least post that goes plain: below it LL lines,
// which arrive with their flags in one miss, are as fast or faster.
// Measured side by side with the spin round trip (FloorSideBySide, 2
// ranks, medians of 3-4 alternating passes; docs/PERFORMANCE.md 12u):
// plain posts against LL lines, on this VM 64 B alike, 256 B 2.1-2.3x the
// spin against 2.3-2.4x, 512 B 2.3x against 3.0-3.6x, 1 KiB 3.1x against
// 4.5-5.7x; on the 16-core Xeon 256 B 2.7x against 2.5-4.6x, 1 KiB 3.9x
// against 4.7-7.3x. Written only by tests (init sets it), read by every
// plan of the board.
var plainMinBytes atomic.Int64

func init() { plainMinBytes.Store(defaultPlainMinBytes) }

const defaultPlainMinBytes = layout.PlainMinBytes

// oneShot returns the communicator's board state, setting it up on first
// use (by the calling goroutine, when it plans a one-shot collective).
func (c *Comm) oneShot() *oneShotState {
	if c.os != nil {
		return c.os
	}
	w := c.w
	s := &oneShotState{board: w.oneShotBoard(), peers: make([]peerSignal, w.n)}
	for r := range s.peers {
		if p := w.comms[r]; p != nil {
			s.peers[r] = peerSignal{waiter: p.channels[0].waiter, kick: p.channels[0].kick}
		} else {
			s.peers[r] = peerSignal{waiter: w.job.remoteWaiter(r, 0), kick: w.job.remoteKick(r, 0)}
		}
		if r != c.rank {
			s.others = append(s.others, s.peers[r].waiter)
		}
	}
	c.os = s
	return s
}

// oneShotBoard returns the world's board, made on first use in a world of
// one process (a job's lives in its shared segments, made at init).
func (w *world) oneShotBoard() *board.Board {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.board == nil {
		parts := make([][]uint64, w.n)
		for r := range parts {
			parts[r] = make([]uint64, board.RankWords)
		}
		w.board = board.NewBoard(parts)
	}
	return w.board
}

// oneShotRounds is how many rounds of how many elements a collective of
// the board takes with algorithm a (at least one: an empty operation still
// takes a round, so every rank counts rounds alike).
func (c *Comm) oneShotRounds(t *task, a tuning.Algo) (rounds, elems int, err error) {
	n, elt := c.Size(), t.elt
	per := layout.RoundBytes
	switch {
	case a == tuning.TwoShot:
		// A round is a block per rank, each on a line of its own.
		per = layout.TwoShotSegment(n) * n
	case t.coll == CollReduceScatter:
		// A round posts one line-aligned segment per rank.
		per = layout.RoundBytes / n / layout.LineBytes * layout.LineBytes
	}
	e := per / elt
	if e == 0 || (a == tuning.TwoShot && layout.TwoShotSegment(n) < elt) {
		return 0, 0, fmt.Errorf("ccl: %s with %s on %d ranks: a round of %d bytes cannot hold one %d-byte element per rank; use Ring", t.coll, a, n, layout.RoundBytes, elt)
	}
	return max((t.count+e-1)/e, 1), e, nil
}

// planOneShot hands a collective of the board its rounds.
func (c *Comm) planOneShot(t task, a tuning.Algo) (oneShotWork, error) {
	rounds, e, err := c.oneShotRounds(&t, a)
	if err != nil {
		return oneShotWork{}, err
	}
	s := c.oneShot()
	w := oneShotWork{seq: s.seq + 1, rounds: rounds, roundElems: e, plain: plainPosts(t.coll, a, t.count, e, t.elt)}
	s.seq += uint64(rounds * seqsPerRound(a))
	return w, nil
}

// seqsPerRound is the board's rounds one round of algorithm a takes: the
// two-shot posts twice, its input and then its reduced block.
func seqsPerRound(a tuning.Algo) int {
	if a == tuning.TwoShot {
		return 2
	}
	return 1
}

// oneShotRound is one round's span of a collective.
type oneShotRound struct {
	seq      uint64
	off, cnt int // elements [off, off+cnt) of the operation (of each block for reducescatter)
	// gather: the two-shot's second round (same span), which posts this
	// rank's reduced block and reads every other.
	gather bool
}

func (w *collWork) oneShotRound(k int) oneShotRound {
	off := k * w.os.roundElems
	return oneShotRound{seq: w.os.seq + uint64(k*seqsPerRound(w.algo)), off: off, cnt: max(min(w.os.roundElems, w.count-off), 0)}
}

// twoShotBlock is rank b's block of the two-shot round rd: elements
// [lo, hi) of the operation, and the line it starts at in rd's first post.
func (w *collWork) twoShotBlock(rd oneShotRound, n, b int) (lo, hi, line int) {
	l, h := board.TwoShotBlock(rd.cnt, n, w.elt, b)
	return rd.off + l, rd.off + h, l * w.elt / layout.LineBytes
}

// posts reports whether rank r posts in this collective: every rank but
// in a broadcast, where the root alone has data.
func (w *collWork) posts(r int) bool { return w.coll != CollBroadcast || r == w.root }

// reads reports whether rank r reads posts: every rank but the root of a
// broadcast, and in a reduce the root alone.
func (w *collWork) reads(r int) bool {
	switch w.coll {
	case CollBroadcast:
		return r != w.root
	case CollReduce:
		return r == w.root
	}
	return true
}

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

// runOneShot is channel 0's part of a collective of the board: every
// round (the two-shot's two), post (unless posted at enqueue), read and
// reduce, acknowledge.
func (ch *channel) runOneShot(w *collWork) error {
	for k := 0; k < w.os.rounds; k++ {
		rd := w.oneShotRound(k)
		if err := ch.oneShotStep(w, rd, k == 0 && w.os.prePosted); err != nil {
			return err
		}
		if w.algo == tuning.TwoShot {
			rd.seq++
			rd.gather = true
			if err := ch.oneShotStep(w, rd, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// oneShotStep runs one round of the board: it waits for the round's slot,
// posts, reads what this rank needs and acknowledges the round.
func (ch *channel) oneShotStep(w *collWork, rd oneShotRound, posted bool) error {
	c := ch.comm
	s := c.os
	me := c.rank
	if w.posts(me) && !posted {
		if !board.Free(rd.seq, s.minAcked) {
			ready := func() bool { s.minAcked = c.minAcked(); return board.Free(rd.seq, s.minAcked) }
			if !ready() && !ch.waiter.Spin(ready) {
				if err := ch.waiter.WaitKick(ready, c.kickPeers, func() string {
					return fmt.Sprintf("every rank to finish one-shot round %d before rank %d reuses its slot", rd.seq-board.Slots, me)
				}); err != nil {
					return err
				}
			}
		}
		c.postRound(w, rd)
	}
	c.settleWakes(true)
	if w.reads(me) {
		if err := ch.readRound(w, rd); err != nil {
			return err
		}
	} else if me == w.root && w.coll == CollBroadcast {
		elt := w.elt
		prims.CopyUnlessSame(w.out[rd.off*elt:(rd.off+rd.cnt)*elt], w.in[rd.off*elt:(rd.off+rd.cnt)*elt])
	}
	s.board.Ack(me, rd.seq)
	// Any peer may wait for this acknowledgement before its next post,
	// in whatever collective it is at by then.
	for _, p := range s.others {
		p.Wake()
	}
	return nil
}

// kickPeers starts every peer's queued channel-0 work nobody runs.
func (c *Comm) kickPeers() {
	for r, p := range c.os.peers {
		if r != c.rank {
			p.kick()
		}
	}
}

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
		if ch.waiter.Spin(ready) {
			continue
		}
		if err := ch.waiter.WaitKick(ready, ch.comm.os.peers[r].kick, func() string {
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
	if ch.waiter.Spin(ready) {
		return nil
	}
	return ch.waiter.WaitKick(ready, ch.comm.os.peers[r].kick, func() string {
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
