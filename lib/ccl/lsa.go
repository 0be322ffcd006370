// lsa.go: load/store access between the ranks of one host (LSA): a
// peer's memory in a window, and the LSA barrier sessions that order the
// loads and stores of every rank's coops (ncclLsaBarrierSession).
//
// A barrier is one arrival word per LSA rank and index. A coop's session
// counts epochs: Arrive stores the next epoch in the rank's word (an
// atomic store: release), Wait loads every peer's word until each has
// reached the epoch (atomic loads: acquire). A peer's stores before its
// Arrive are therefore visible after Wait: the atomic store that Wait's
// load observed synchronises with that load (Go's memory model in one
// process; across processes the same instructions on the same shared
// memory). A waiter that runs out of spinning parks on its waiter (a bell
// in the shared segment across processes), which every Arrive wakes.

package ccl

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/gccl/gccl/lib/proto"
)

// barrierLine is the room each arrival word and each bell takes: a
// cache line, so that ranks arriving do not share one.
const barrierLine = 64

// lsaBarriers are the barriers of one LSA team: count indices of size
// ranks, first the team's first world rank. mem holds count*size arrival
// lines, then count*size bells (used across processes).
type lsaBarriers struct {
	count, size, first int
	mem                []byte
	// waiters[l][i] is the waiter of LSA rank l's coop i: its own for a
	// rank of this process, a RemoteWaiter (its bell) for another's.
	waiters [][]*proto.Waiter
	names   func(r int) string // names world rank r in messages
}

func (t *lsaBarriers) bytes() int { return 2 * t.count * t.size * barrierLine }

// word is LSA rank l's arrival word of barrier i: written (Store) by
// that rank's coop i in Arrive, read (Load) by the coops i of the team's
// other ranks in Wait, and by its own at the session's start.
func (t *lsaBarriers) word(i, l int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&t.mem[(i*t.size+l)*barrierLine]))
}

// bell is LSA rank l's bell of barrier i (across processes).
func (t *lsaBarriers) bell(i, l int) *proto.Bell {
	return proto.BellAt(t.mem[(t.count*t.size+i*t.size+l)*barrierLine:])
}

// makeWaiters makes the waiters of the team's ranks: j is the job when
// the team spans processes (bells), nil in one process.
func (t *lsaBarriers) makeWaiters(w *world, j *job) {
	t.names = func(r int) string { return fmt.Sprintf("rank %d", r) }
	if j != nil {
		t.names = j.rankName
	}
	t.waiters = make([][]*proto.Waiter, t.size)
	local := map[int]bool{}
	for _, c := range w.local {
		local[c.rank] = true
	}
	// Spin as the stack's runners do, a coop a runner (a stream
	// adjusts its rank's to the goroutines it runs the coops on).
	waiting, procs := len(w.local)*t.count, w.freeProcs()
	for l := range t.waiters {
		t.waiters[l] = make([]*proto.Waiter, t.count)
		for i := range t.count {
			var wt *proto.Waiter
			switch {
			case j != nil && !local[t.first+l]:
				wt = proto.RemoteWaiter(t.bell(i, l))
			case j != nil:
				wt = w.waiterFor(t.bell(i, l))
			default:
				wt = w.waiterFor(nil)
			}
			spinning(wt, waiting, procs)
			t.waiters[l][i] = wt
		}
	}
}

// goMemory is n zeroed bytes, 8-byte aligned, for atomics.
func goMemory(n int) []byte {
	words := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
}

// LsaBarrierSession is a coop's session on one LSA barrier
// (ncclLsaBarrierSession). It belongs to one goroutine.
type LsaBarrierSession struct {
	d     *DevComm
	t     *lsaBarriers
	index int
	epoch uint32 // the epoch of the last Arrive; owned by the session's goroutine
}

// LsaBarrier starts coop index's session on its LSA barrier: every LSA
// rank's coop of the same index meets there. Each coop uses its own index
// (0..LsaBarrierCount-1), one goroutine at a time.
func (d *DevComm) LsaBarrier(index int) (*LsaBarrierSession, error) {
	if err := d.usable(); err != nil {
		return nil, fmt.Errorf("ccl: LsaBarrier: %w", err)
	}
	if index < 0 || index >= d.lsa.count {
		if d.lsa.count == 0 {
			return nil, fmt.Errorf("ccl: LsaBarrier: index %d: the device communicator has no LSA barriers (ask for LsaBarrierCount)", index)
		}
		return nil, fmt.Errorf("ccl: LsaBarrier: index %d is out of range: want 0..%d (LsaBarrierCount)", index, d.lsa.count-1)
	}
	// The word holds the epoch this rank reached last time: the session
	// goes on from there.
	return &LsaBarrierSession{d: d, t: d.lsa, index: index, epoch: d.lsa.word(index, d.LsaRank).Load()}, nil
}

// Arrive announces that this rank's coop arrived: its stores so far are
// visible to every peer once that peer's Wait returns (release).
func (s *LsaBarrierSession) Arrive() {
	if s.d.destroyed.Load() {
		return // Wait reports it
	}
	s.epoch++
	s.t.word(s.index, s.d.LsaRank).Store(s.epoch)
	for l, ws := range s.t.waiters {
		if l != s.d.LsaRank {
			ws[s.index].Wake()
		}
	}
}

// Wait returns once every LSA peer's coop arrived at this session's
// epoch; the peers' stores before their Arrive are then visible
// (acquire). A wait without progress for the communicator's timeout
// aborts the communicator and returns an error naming the late ranks; an
// aborted communicator's fails at once.
func (s *LsaBarrierSession) Wait() error {
	if err := s.d.usable(); err != nil {
		return fmt.Errorf("ccl: LsaBarrier %d: %w", s.index, err)
	}
	err := s.t.waiters[s.d.LsaRank][s.index].Wait(s.arrived, s.late)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("ccl: rank %d: %w", s.d.Rank, err)
	if errors.Is(err, ErrTimeout) {
		s.d.c.w.abort.Trigger(err)
	}
	return err
}

// Sync is Arrive then Wait.
func (s *LsaBarrierSession) Sync() error {
	s.Arrive()
	return s.Wait()
}

// arrived reports whether every peer reached the session's epoch; epochs
// compare modulo 2^32 (a peer is at most one epoch ahead).
func (s *LsaBarrierSession) arrived() bool {
	for l := 0; l < s.t.size; l++ {
		if int32(s.t.word(s.index, l).Load()-s.epoch) < 0 {
			return false
		}
	}
	return true
}

// late names the peers that have not arrived, for the timeout's message.
func (s *LsaBarrierSession) late() string {
	var late []string
	for l := 0; l < s.t.size; l++ {
		if int32(s.t.word(s.index, l).Load()-s.epoch) < 0 {
			late = append(late, s.t.names(s.t.first+l))
		}
	}
	return fmt.Sprintf("LSA barrier %d, epoch %d: %s to arrive", s.index, s.epoch, strings.Join(late, ", "))
}

// LsaPointer is LSA peer lsaPeer's memory in window win from byte offset
// on (ncclGetLsaPointer).
func (d *DevComm) LsaPointer(win *Window, offset, lsaPeer int) ([]byte, error) {
	if err := d.usable(); err != nil {
		return nil, fmt.Errorf("ccl: LsaPointer: %w", err)
	}
	if lsaPeer < 0 || lsaPeer >= d.LsaSize {
		return nil, fmt.Errorf("ccl: LsaPointer: LSA peer %d is out of range: want 0..%d", lsaPeer, d.LsaSize-1)
	}
	return d.pointer(win, offset, d.Rank-d.LsaRank+lsaPeer, "LsaPointer")
}

// PeerPointer is world rank peer's memory in window win from byte offset
// on (ncclGetPeerPointer); nil (and no error) for a peer outside this
// rank's LSA team.
func (d *DevComm) PeerPointer(win *Window, offset, peer int) ([]byte, error) {
	if err := d.usable(); err != nil {
		return nil, fmt.Errorf("ccl: PeerPointer: %w", err)
	}
	if peer < 0 || peer >= d.NRanks {
		return nil, fmt.Errorf("ccl: PeerPointer: rank %d is out of range: want 0..%d", peer, d.NRanks-1)
	}
	if !TeamRankIsMember(TeamLsa(d), TeamWorld(d), peer) {
		return nil, nil
	}
	return d.pointer(win, offset, peer, "PeerPointer")
}

// LocalPointer is this rank's memory in window win from byte offset on
// (ncclGetLocalPointer).
func (d *DevComm) LocalPointer(win *Window, offset int) ([]byte, error) {
	if err := d.usable(); err != nil {
		return nil, fmt.Errorf("ccl: LocalPointer: %w", err)
	}
	return d.pointer(win, offset, d.Rank, "LocalPointer")
}

// pointer is world rank r's (of this LSA team) memory in win from offset.
func (d *DevComm) pointer(win *Window, offset, r int, fn string) ([]byte, error) {
	if err := d.c.ownWindow(win); err != nil {
		return nil, fmt.Errorf("ccl: %s: %w", fn, err)
	}
	s := win.set
	if r != d.Rank && s.flags != WinCollSymmetric {
		return nil, fmt.Errorf("ccl: %s: window %d was registered without WinCollSymmetric: only this rank's own part is reachable", fn, s.index)
	}
	if offset < 0 || offset > s.sizes[r] {
		return nil, fmt.Errorf("ccl: %s: offset %d is outside rank %d's part of window %d: want 0..%d", fn, offset, r, s.index, s.sizes[r])
	}
	b := s.bufs[r]
	return b[offset:len(b):len(b)], nil
}
