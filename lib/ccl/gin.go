// gin.go: GIN, the device API's one-sided network operations (ncclGin):
// a coop puts bytes from its window into a peer's window, or a value, or
// only a signal, and the put is carried by a proxy (ginType "proxy"): the
// rank queues it on its GIN context, the context's sending proxy moves it
// (gin_proxy.go), and at the destination the payload lands in the
// window's memory before the signal is added.
//
// Ordering (NCCL's promise, kept here): a signal that a rank sees implies
// that the data of the put it came with, and of every earlier put of the
// same GIN context to the same peer, is visible to it. Each context's
// operations of one rank go through one FIFO queue and one sending proxy
// in order, over one connection per destination process, read by one
// receiving proxy in order; that proxy (or the sending proxy itself, for a
// rank of its own process) writes the payload into the window and only
// then adds to the signal with an atomic add (a release); ReadSignal and
// WaitSignal load it atomically (an acquire). The payload's write happens
// before the add, which synchronises with the load that observes it.
//
// Signals (uint64 per index) are written by the proxies that land remote
// actions and read by the rank's coops; counters (local completion: the
// put's source bytes have been consumed) are written by the rank's own
// sending proxies. Both are per rank, shared by its contexts.

package ccl

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gccl/gccl/lib/transport"
)

// RemoteAction is what a put or a signal does at the destination once its
// payload has landed (ncclGin_SignalInc, ncclGin_SignalAdd); nil: nothing
// (ncclGin_None).
type RemoteAction interface {
	signalAction() (idx int, add uint64)
}

// SignalInc adds 1 to the destination's signal Signal (ncclGin_SignalInc).
type SignalInc struct{ Signal int }

// SignalAdd adds Value to the destination's signal Signal
// (ncclGin_SignalAdd).
type SignalAdd struct {
	Signal int
	Value  uint64
}

func (a SignalInc) signalAction() (int, uint64) { return a.Signal, 1 }
func (a SignalAdd) signalAction() (int, uint64) { return a.Signal, a.Value }

// LocalAction is what a put does on the issuing rank once its source has
// been consumed (ncclGin_CounterInc); nil: nothing.
type LocalAction interface {
	counterAction() int
}

// CounterInc adds 1 to the issuing rank's counter Counter once the put's
// source bytes are consumed (ncclGin_CounterInc).
type CounterInc struct{ Counter int }

func (a CounterInc) counterAction() int { return a.Counter }

// counterBits is the width of a counter (NCCL's are 56 bits).
const counterBits = 56

// Gin is a rank's handle on one GIN context (ncclGin). Any goroutine of
// the rank may use it; the operations of one goroutine on one context
// keep their order.
type Gin struct {
	d   *DevComm
	ctx int
	tx  *ginTx    // this rank's sending proxy of the context
	r   *ginRank  // this rank's signals, counters and barrier words
	set *ginSet   // the DevCommCreate's GIN
	ws  *ginWaits // this rank's waiters
}

// Gin returns this rank's handle on GIN context contextIndex
// (0..GinContextCount-1).
func (d *DevComm) Gin(contextIndex int) (*Gin, error) {
	if err := d.usable(); err != nil {
		return nil, fmt.Errorf("ccl: Gin: %w", err)
	}
	g := d.set.gin
	if g == nil {
		return nil, fmt.Errorf("ccl: Gin: context %d: the device communicator has no GIN contexts (ask for GinContextCount)", contextIndex)
	}
	if contextIndex < 0 || contextIndex >= g.nCtx {
		return nil, fmt.Errorf("ccl: Gin: context %d is out of range: want 0..%d (GinContextCount)", contextIndex, g.nCtx-1)
	}
	r := g.ranks[d.Rank]
	return &Gin{d: d, ctx: contextIndex, tx: r.tx[contextIndex], r: r, set: g, ws: &r.waits}, nil
}

// Context is the handle's context index.
func (g *Gin) Context() int { return g.ctx }

// peerRank is team's rank peer as a world rank.
func (g *Gin) peerRank(team Team, peer int) (int, error) {
	if team.NRanks < 1 || team.Stride < 1 || team.Rank < 0 || team.Rank >= team.NRanks {
		return 0, fmt.Errorf("team %+v is not a team of this rank: want one from TeamWorld, TeamLsa, TeamRail or their factors", team)
	}
	if peer < 0 || peer >= team.NRanks {
		return 0, fmt.Errorf("peer %d is out of range: want 0..%d (the team's NRanks)", peer, team.NRanks-1)
	}
	p := TeamRankToWorld(g.d, team, peer)
	if p < 0 || p >= g.d.NRanks {
		return 0, fmt.Errorf("peer %d of team %+v is world rank %d, outside 0..%d: the team does not fit this communicator", peer, team, p, g.d.NRanks-1)
	}
	return p, nil
}

// remote checks a remote action and returns its signal (-1: none).
func (g *Gin) remote(a RemoteAction) (int, uint64, error) {
	if a == nil {
		return -1, 0, nil
	}
	idx, add := a.signalAction()
	if idx < 0 || idx >= g.set.nSig {
		return 0, 0, g.set.badIndex("signal", idx, g.set.nSig, "GinSignalCount")
	}
	return idx, add, nil
}

// Put queues a one-sided copy of n bytes from this rank's part of window
// src at srcOff to team rank peer's part of window dst at dstOff
// (ncclGin::put); remote is done at the peer once the bytes landed, local
// here once they left src. src's bytes must stay unchanged until then
// (Flush, or the local action's counter).
func (g *Gin) Put(team Team, peer int, dst *Window, dstOff int, src *Window, srcOff int, n int, remote RemoteAction, local LocalAction) error {
	op, err := g.putOp(team, peer, dst, dstOff, n, remote)
	if err != nil {
		return fmt.Errorf("ccl: Gin.Put: %w", err)
	}
	if err := g.d.c.ownWindow(src); err != nil {
		return fmt.Errorf("ccl: Gin.Put: source: %w", err)
	}
	mine := src.set.bufs[g.d.Rank]
	if srcOff < 0 || srcOff > len(mine)-n {
		return fmt.Errorf("ccl: Gin.Put: source bytes %d..%d are outside this rank's part of window %d (%d bytes)", srcOff, srcOff+n, src.set.index, len(mine))
	}
	op.data = mine[srcOff : srcOff+n : srcOff+n]
	if local != nil {
		if op.ctr = local.counterAction(); op.ctr < 0 || op.ctr >= g.set.nCtr {
			return fmt.Errorf("ccl: Gin.Put: %w", g.set.badIndex("counter", op.ctr, g.set.nCtr, "GinCounterCount"))
		}
	}
	return g.post(op)
}

// PutValue queues a one-sided store of value (8 bytes, little-endian) to
// team rank peer's part of window dst at dstOff (ncclGin::putValue).
func (g *Gin) PutValue(team Team, peer int, dst *Window, dstOff int, value uint64, remote RemoteAction) error {
	op, err := g.putOp(team, peer, dst, dstOff, 8, remote)
	if err != nil {
		return fmt.Errorf("ccl: Gin.PutValue: %w", err)
	}
	op.data = binary.LittleEndian.AppendUint64(make([]byte, 0, 8), value)
	return g.post(op)
}

// putOp checks a put's destination and remote action.
func (g *Gin) putOp(team Team, peer int, dst *Window, dstOff, n int, remote RemoteAction) (ginOp, error) {
	if err := g.d.usable(); err != nil {
		return ginOp{}, err
	}
	p, err := g.peerRank(team, peer)
	if err != nil {
		return ginOp{}, err
	}
	if err := g.d.c.ownWindow(dst); err != nil {
		return ginOp{}, fmt.Errorf("destination: %w", err)
	}
	s := dst.set
	if s.flags != WinCollSymmetric && p != g.d.Rank {
		return ginOp{}, fmt.Errorf("window %d was registered without WinCollSymmetric: no peer's part is reachable", s.index)
	}
	if n < 0 || dstOff < 0 || dstOff > s.sizes[p]-n {
		return ginOp{}, fmt.Errorf("bytes %d..%d are outside rank %d's part of window %d (%d bytes)", dstOff, dstOff+n, p, s.index, s.sizes[p])
	}
	sig, add, err := g.remote(remote)
	if err != nil {
		return ginOp{}, err
	}
	return ginOp{h: transport.GinHeader{Kind: transport.GinPut, Dst: p, Win: s.index, Sig: sig, Off: uint64(dstOff), Add: add, N: n}, win: s, ctr: -1}, nil
}

// Signal queues remote at team rank peer, without data (ncclGin::signal).
func (g *Gin) Signal(team Team, peer int, remote RemoteAction) error {
	if err := g.d.usable(); err != nil {
		return fmt.Errorf("ccl: Gin.Signal: %w", err)
	}
	p, err := g.peerRank(team, peer)
	if err != nil {
		return fmt.Errorf("ccl: Gin.Signal: %w", err)
	}
	if remote == nil {
		return errors.New("ccl: Gin.Signal: no remote action (nil): want SignalInc or SignalAdd")
	}
	sig, add, err := g.remote(remote)
	if err != nil {
		return fmt.Errorf("ccl: Gin.Signal: %w", err)
	}
	return g.post(ginOp{h: transport.GinHeader{Kind: transport.GinSignal, Dst: p, Sig: sig, Add: add}, ctr: -1})
}

// post queues op on this rank's sending proxy of the context.
func (g *Gin) post(op ginOp) error {
	if err := g.tx.post(op); err != nil {
		return fmt.Errorf("ccl: Gin: rank %d, context %d: %w", g.d.Rank, g.ctx, err)
	}
	return nil
}

// Flush returns once every operation this rank queued on this context so
// far has left its source (ncclGin::flush): the source bytes may be
// reused. It says nothing of their arrival.
func (g *Gin) Flush() error {
	if err := g.d.usable(); err != nil {
		return fmt.Errorf("ccl: Gin.Flush: %w", err)
	}
	t := g.tx
	target := t.issuedCount()
	err := g.wait(func() bool { return t.done.Load() >= target }, func() string {
		return fmt.Sprintf("GIN context %d's operations to leave (%d of %d)", g.ctx, t.done.Load(), target)
	})
	if err != nil {
		return fmt.Errorf("ccl: Gin.Flush: %w", err)
	}
	return nil
}

// ReadSignal is this rank's signal idx (ncclGin::readSignal; an acquire).
func (g *Gin) ReadSignal(idx int) (uint64, error) {
	if idx < 0 || idx >= g.set.nSig {
		return 0, fmt.Errorf("ccl: Gin.ReadSignal: %w", g.set.badIndex("signal", idx, g.set.nSig, "GinSignalCount"))
	}
	return g.r.signals[idx].Load(), nil
}

// WaitSignal returns once this rank's signal idx reached least: rolling
// comparison, value - least read as a signed 64-bit number is >= 0
// (ncclGin::waitSignal; an acquire). A wait without progress for the
// communicator's timeout aborts it.
func (g *Gin) WaitSignal(idx int, least uint64) error {
	if idx < 0 || idx >= g.set.nSig {
		return fmt.Errorf("ccl: Gin.WaitSignal: %w", g.set.badIndex("signal", idx, g.set.nSig, "GinSignalCount"))
	}
	w := &g.r.signals[idx]
	err := g.wait(func() bool { return int64(w.Load()-least) >= 0 }, func() string {
		return fmt.Sprintf("GIN signal %d to reach %d (it is %d)", idx, least, w.Load())
	})
	if err != nil {
		return fmt.Errorf("ccl: Gin.WaitSignal: %w", err)
	}
	return nil
}

// ResetSignal sets this rank's signal idx to 0 (ncclGin::resetSignal): no
// operation may be adding to it meanwhile.
func (g *Gin) ResetSignal(idx int) error {
	if idx < 0 || idx >= g.set.nSig {
		return fmt.Errorf("ccl: Gin.ResetSignal: %w", g.set.badIndex("signal", idx, g.set.nSig, "GinSignalCount"))
	}
	g.r.signals[idx].Store(0)
	return nil
}

// ReadCounter is this rank's counter idx, 56 bits (ncclGin::readCounter).
func (g *Gin) ReadCounter(idx int) (uint64, error) {
	if idx < 0 || idx >= g.set.nCtr {
		return 0, fmt.Errorf("ccl: Gin.ReadCounter: %w", g.set.badIndex("counter", idx, g.set.nCtr, "GinCounterCount"))
	}
	return g.r.counters[idx].Load() & (1<<counterBits - 1), nil
}

// WaitCounter returns once this rank's counter idx reached least, rolling
// over 56 bits (ncclGin::waitCounter).
func (g *Gin) WaitCounter(idx int, least uint64) error {
	if idx < 0 || idx >= g.set.nCtr {
		return fmt.Errorf("ccl: Gin.WaitCounter: %w", g.set.badIndex("counter", idx, g.set.nCtr, "GinCounterCount"))
	}
	w := &g.r.counters[idx]
	err := g.wait(func() bool { return int64((w.Load()-least)<<(64-counterBits)) >= 0 }, func() string {
		return fmt.Sprintf("GIN counter %d to reach %d (it is %d)", idx, least, w.Load())
	})
	if err != nil {
		return fmt.Errorf("ccl: Gin.WaitCounter: %w", err)
	}
	return nil
}

// ResetCounter sets this rank's counter idx to 0: no put with it as local
// action may be in flight.
func (g *Gin) ResetCounter(idx int) error {
	if idx < 0 || idx >= g.set.nCtr {
		return fmt.Errorf("ccl: Gin.ResetCounter: %w", g.set.badIndex("counter", idx, g.set.nCtr, "GinCounterCount"))
	}
	g.r.counters[idx].Store(0)
	return nil
}

// wait waits for ready on this rank's waiters; a timeout aborts the
// communicator (as the LSA barrier's does).
func (g *Gin) wait(ready func() bool, what func() string) error {
	if err := g.d.usable(); err != nil {
		return err
	}
	err := g.ws.wait(g.set.w, ready, what)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("rank %d: %w", g.d.Rank, err)
	if errors.Is(err, ErrTimeout) {
		g.set.w.abort.Trigger(fmt.Errorf("ccl: %w", err))
	}
	return err
}
