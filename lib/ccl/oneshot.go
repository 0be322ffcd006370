// oneshot.go: the one-shot and two-shot algorithms on the board: their
// state, planning into rounds, and channel 0's loop over the rounds.
// Posting is in oneshot_post.go, reading and reducing in oneshot_read.go.

package ccl

import (
	"fmt"
	"sync/atomic"

	"github.com/gccl/gccl/lib/board"
	"github.com/gccl/gccl/lib/board/layout"
	"github.com/gccl/gccl/lib/prims"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/steptrace"
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
// ranks, medians of 3-4 alternating passes): plain posts against LL
// lines, on this VM 64 B alike and plain faster from 256 B, the more so
// at 512 B and 1 KiB; on the 16-core Xeon the same from 256 B
// (docs/log/performance-2026-11.md 12u; today's floor: docs/PERFORMANCE.md,
// "The latency floor"). Written only by tests (init sets it), read by
// every plan of the board.
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
	tr := ch.waiter.Trace
	if w.posts(me) && !posted {
		if !board.Free(rd.seq, s.minAcked) {
			ready := func() bool { s.minAcked = c.minAcked(); return board.Free(rd.seq, s.minAcked) }
			if !ready() {
				ch.waiter.For(steptrace.OnBarrier, -1)
				if err := ch.waiter.SpinWaitKick(ready, c.kickPeers, func() string {
					return fmt.Sprintf("every rank to finish one-shot round %d before rank %d reuses its slot", rd.seq-board.Slots, me)
				}); err != nil {
					return err
				}
			}
		}
		c.postRound(w, rd)
		if tr != nil {
			tr.Step("post", llName, -1, -1, int64(rd.cnt*w.elt))
		}
	}
	c.settleWakes(true)
	if w.reads(me) {
		err := ch.readRound(w, rd)
		if tr != nil {
			tr.Step(oneShotReadName(w, rd), llName, -1, w.readsFrom(me, c.Size()), int64(rd.cnt*w.elt))
		}
		if err != nil {
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
