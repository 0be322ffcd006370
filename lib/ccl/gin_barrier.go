// gin_barrier.go: the GIN barrier session (ncclGinBarrierSession) over a
// team, the rail team by default, and the hybrid barrier
// (ncclBarrierSession over the world: LSA inside a host, GIN across).
//
// A GIN barrier is, per index, one epoch word per (receiving rank,
// sending rank). Arrive queues an arrival frame with the session's next
// epoch to every member, itself included, on the session's GIN context;
// the member's proxy stores the epoch in its word for this rank (an
// atomic store after every earlier operation of the context to that
// member has landed: arrivals order like signals, loopback puts too).
// Wait loads the words of every member until each reached the epoch.

package ccl

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/gccl/gccl/lib/transport"
)

// GinBarrierSession is a coop's session on one GIN barrier over a team.
// It belongs to one goroutine.
type GinBarrierSession struct {
	g       *Gin
	index   int
	members []int  // the team's world ranks
	epoch   uint32 // the epoch of the last Arrive; the session's goroutine's
}

// RailBarrier starts a session on GIN barrier index over the rail team
// (the ranks of this LSA rank on every host; ncclGinBarrierSession with
// ncclTeamTagRail).
func (g *Gin) RailBarrier(index int) (*GinBarrierSession, error) {
	return g.Barrier(TeamRail(g.d), index)
}

// Barrier starts a session on GIN barrier index (0..GinBarrierCount-1)
// over team: every member's coop of the same index meets there. An index
// serves one team throughout.
func (g *Gin) Barrier(team Team, index int) (*GinBarrierSession, error) {
	if err := g.d.usable(); err != nil {
		return nil, fmt.Errorf("ccl: Gin.Barrier: %w", err)
	}
	if index < 0 || index >= g.set.nBar {
		return nil, fmt.Errorf("ccl: Gin.Barrier: %w", g.set.badIndex("barrier", index, g.set.nBar, "RailGinBarrierCount or BarrierCount"))
	}
	s := &GinBarrierSession{g: g, index: index}
	for p := range team.NRanks {
		r, err := g.peerRank(team, p)
		if err != nil {
			return nil, fmt.Errorf("ccl: Gin.Barrier: %w", err)
		}
		s.members = append(s.members, r)
	}
	s.epoch = s.word(g.d.Rank).Load()
	return s, nil
}

// word is rank r's epoch word of the session's barrier at this rank.
func (s *GinBarrierSession) word(r int) *atomic.Uint32 {
	return &s.g.r.bars[s.index*s.g.set.w.n+r]
}

// Arrive announces this rank's arrival to every member: its operations on
// the session's context queued before it land at a member before the
// member sees the arrival.
func (s *GinBarrierSession) Arrive() error {
	if err := s.g.d.usable(); err != nil {
		return fmt.Errorf("ccl: GinBarrier %d: %w", s.index, err)
	}
	s.epoch++
	for _, m := range s.members {
		op := ginOp{h: transport.GinHeader{Kind: transport.GinArrive, Dst: m, Sig: -1, Off: uint64(s.epoch), Index: s.index}, ctr: -1}
		if err := s.g.post(op); err != nil {
			return err
		}
	}
	return nil
}

// Wait returns once every member arrived at the session's epoch. A wait
// without progress for the communicator's timeout aborts it and names
// the late ranks; an aborted communicator's (a lost peer) fails at once.
func (s *GinBarrierSession) Wait() error {
	err := s.g.wait(s.arrived, s.late)
	if err != nil {
		return fmt.Errorf("ccl: GinBarrier %d: %w", s.index, err)
	}
	return nil
}

// Sync is Arrive then Wait.
func (s *GinBarrierSession) Sync() error {
	if err := s.Arrive(); err != nil {
		return err
	}
	return s.Wait()
}

// arrived reports whether every member reached the epoch (modulo 2^32: a
// member is at most one epoch ahead).
func (s *GinBarrierSession) arrived() bool {
	for _, m := range s.members {
		if int32(s.word(m).Load()-s.epoch) < 0 {
			return false
		}
	}
	return true
}

// late names the members that have not arrived.
func (s *GinBarrierSession) late() string {
	var late []string
	for _, m := range s.members {
		if int32(s.word(m).Load()-s.epoch) < 0 {
			late = append(late, s.g.set.w.job.rankName(m))
		}
	}
	return fmt.Sprintf("GIN barrier %d, epoch %d: %s to arrive", s.index, s.epoch, strings.Join(late, ", "))
}

// BarrierSession is a coop's session on the hybrid barrier over the
// world (ncclBarrierSession): the LSA barrier of its index inside the
// host, then the GIN barrier of its index over the rail team. Once it
// returns every rank of the world has arrived: each rail peer passed its
// host's LSA barrier before it arrived on the rail. It orders the LSA
// stores of the host's ranks, and the GIN operations that the rail peers
// queued on the session's context before it; a put to another rank of
// another host is ordered by its signal, not by this barrier.
type BarrierSession struct {
	lsa *LsaBarrierSession
	gin *GinBarrierSession
}

// Barrier starts coop index's session on the hybrid barrier: index names
// both its LSA barrier and its GIN barrier, whose arrivals go on g's
// context.
func (d *DevComm) Barrier(g *Gin, index int) (*BarrierSession, error) {
	if g == nil || g.d != d {
		return nil, errors.New("ccl: Barrier: want a GIN context of this device communicator (from its Gin)")
	}
	lsa, err := d.LsaBarrier(index)
	if err != nil {
		return nil, fmt.Errorf("ccl: Barrier: %w", err)
	}
	gin, err := g.RailBarrier(index)
	if err != nil {
		return nil, fmt.Errorf("ccl: Barrier: %w", err)
	}
	return &BarrierSession{lsa: lsa, gin: gin}, nil
}

// Arrive arrives on the LSA barrier; the rail's part follows in Wait,
// once the host's ranks have all arrived.
func (s *BarrierSession) Arrive() { s.lsa.Arrive() }

// Wait waits for the host's ranks, then syncs with the rail.
func (s *BarrierSession) Wait() error {
	if err := s.lsa.Wait(); err != nil {
		return err
	}
	return s.gin.Sync()
}

// Sync is Arrive then Wait.
func (s *BarrierSession) Sync() error {
	s.Arrive()
	return s.Wait()
}
