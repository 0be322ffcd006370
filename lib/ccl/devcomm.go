// devcomm.go: the device communicator (ncclDevComm): what a "kernel" (a
// set of goroutines, each a CTA) needs to load and store the memory of
// the ranks of its host and to synchronise with them (lsa.go), made from
// the caller's requirements by a collective call. GIN (one-sided puts and
// signals through proxies, across hosts too) is in gin.go.

package ccl

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/shm"
)

// DevCommRequirements are what a device communicator must provide
// (ncclDevCommRequirements). Every rank passes the same.
type DevCommRequirements struct {
	// BarrierCount is the least number of both LSA and rail GIN barriers.
	BarrierCount int
	// LsaBarrierCount is the number of LSA barriers (one per coop).
	LsaBarrierCount int
	// RailGinBarrierCount is the number of GIN barriers over the rail team.
	RailGinBarrierCount int
	// GinContextCount, GinSignalCount and GinCounterCount size GIN.
	GinContextCount, GinSignalCount, GinCounterCount int
	// LsaMultimem asks for multicast memory (NVLink SHARP): refused.
	LsaMultimem bool
}

// DevCommProperties is what QueryProperties reports
// (ncclCommQueryProperties' device API part).
type DevCommProperties struct {
	DeviceAPISupport bool
	GinType          string // "proxy" when the communicator has GIN contexts, else "none"
	NLsaTeams        int    // LSA teams (hosts) in the world
}

// DevComm is one rank's device communicator.
type DevComm struct {
	Rank, NRanks     int // this rank and the world's size
	LsaRank, LsaSize int // this rank within its LSA team (its host's ranks) and the team's size
	LsaBarrierCount  int // LSA barriers: valid indices are 0..LsaBarrierCount-1
	// GIN: contexts, signals, counters and GIN barriers (indices 0..n-1).
	GinContextCount, GinSignalCount, GinCounterCount, GinBarrierCount int

	c   *Comm
	set *devSet
	lsa *lsaBarriers // this rank's LSA team's barriers
	// destroyed is written by Destroy and read by every call of the
	// device communicator (the coops' included).
	destroyed atomic.Bool
}

// devSet is what the local ranks' device communicators of one
// DevCommCreate share.
type devSet struct {
	reqs  DevCommRequirements
	teams map[int]*lsaBarriers // by host: the LSA teams with a rank in this process
	seg   *shm.Segment         // across processes: this host's barrier memory; nil in one process
	gin   *ginSet              // GIN (gin.go); nil without GIN contexts
	mu    sync.Mutex           // guards refs and closed
	refs  int                  // the local device communicators not yet destroyed
	// closed: the segment is unmapped (the last local Destroy); the abort
	// hook, which rings bells in it, then does nothing.
	closed bool
}

// DevCommCreate creates this rank's device communicator
// (ncclDevCommCreate). It is collective: every rank calls it, in the same
// order as the other device collectives, with the same requirements.
func (c *Comm) DevCommCreate(reqs DevCommRequirements) (*DevComm, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := checkReqs(reqs); err != nil {
		return nil, fmt.Errorf("ccl: DevCommCreate: %w", err)
	}
	size, err := lsaLayout(c.w.hostOf)
	if err != nil {
		return nil, fmt.Errorf("ccl: DevCommCreate: %w", err)
	}
	out, err := c.meet(devOp{kind: "DevCommCreate", prep: c.w.devPrep, build: c.w.devBuild}, reqs)
	if err != nil {
		return nil, err
	}
	set := out.(*devSet)
	host := c.w.hostOf[c.rank]
	d := &DevComm{
		Rank: c.rank, NRanks: c.w.n, LsaRank: c.rank - host*size, LsaSize: size,
		LsaBarrierCount: set.teams[host].count,
		c:               c, set: set, lsa: set.teams[host],
	}
	if g := set.gin; g != nil {
		d.GinContextCount, d.GinSignalCount, d.GinCounterCount, d.GinBarrierCount = g.nCtx, g.nSig, g.nCtr, g.nBar
	}
	return d, nil
}

// checkReqs refuses the requirements a CPU cannot meet.
func checkReqs(r DevCommRequirements) error {
	for _, f := range []struct {
		name string
		n    int
	}{{"BarrierCount", r.BarrierCount}, {"LsaBarrierCount", r.LsaBarrierCount}, {"RailGinBarrierCount", r.RailGinBarrierCount},
		{"GinContextCount", r.GinContextCount}, {"GinSignalCount", r.GinSignalCount}, {"GinCounterCount", r.GinCounterCount}} {
		if f.n < 0 {
			return fmt.Errorf("%s is %d: want 0 or more", f.name, f.n)
		}
	}
	if r.LsaMultimem {
		return errors.New("LsaMultimem: multimem (NVLink SHARP) has no CPU counterpart: leave it false")
	}
	if r.GinContextCount > maxGinContexts {
		return fmt.Errorf("GinContextCount is %d: at most %d", r.GinContextCount, maxGinContexts)
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"GinSignalCount", r.GinSignalCount}, {"GinCounterCount", r.GinCounterCount}, {"RailGinBarrierCount", r.RailGinBarrierCount}} {
		if f.n > maxGinIndices {
			return fmt.Errorf("%s is %d: at most %d", f.name, f.n, maxGinIndices)
		}
		if f.n > 0 && r.GinContextCount == 0 {
			return fmt.Errorf("%s is %d but GinContextCount is 0: GIN signals, counters and barriers need a GIN context (ask for GinContextCount 1 or more)", f.name, f.n)
		}
	}
	return nil
}

// ginBarrierCount is the GIN barriers requirements ask for (none without
// a GIN context to carry them).
func (r DevCommRequirements) ginBarrierCount() int {
	if r.GinContextCount == 0 {
		return 0
	}
	return max(r.RailGinBarrierCount, r.BarrierCount)
}

// lsaLayout is the LSA teams' size: every host must hold the same number
// of consecutive ranks (the rail team strides over them).
func lsaLayout(hostOf []int) (int, error) {
	size := 0
	for size < len(hostOf) && hostOf[size] == hostOf[0] {
		size++
	}
	for r, h := range hostOf {
		if h != r/size || len(hostOf)%size != 0 {
			return 0, fmt.Errorf("the device API needs every host to hold the same number of consecutive ranks (host of each rank: %v)", hostOf)
		}
	}
	return size, nil
}

// lsaBarrierCount is the LSA barriers requirements ask for.
func (r DevCommRequirements) lsaBarrierCount() int { return max(r.LsaBarrierCount, r.BarrierCount) }

// devPrep is this process's requirements and, with GIN contexts, the
// address its GIN peers dial.
func (w *world) devPrep(args map[int]any) ([]byte, error) {
	b := devBlob{Reqs: args[sortedRanks(args)[0]].(DevCommRequirements)}
	if b.Reqs.GinContextCount > 0 && checkReqs(b.Reqs) == nil {
		l, err := w.ginListener()
		if err != nil {
			return nil, err
		}
		b.GinAddr = l.Addr()
	}
	return json.Marshal(b)
}

// devBuild checks that every rank asks for the same and makes the
// barriers of this process's LSA teams.
func (w *world) devBuild(args map[int]any, blobs [][]byte) (any, error) {
	rs := sortedRanks(args)
	reqs := args[rs[0]].(DevCommRequirements)
	for _, r := range rs[1:] {
		if o := args[r].(DevCommRequirements); o != reqs {
			return nil, fmt.Errorf("rank %d asks for %+v and rank %d for %+v: every rank must pass the same requirements", rs[0], reqs, r, o)
		}
	}
	for pi, blob := range blobs {
		var o devBlob
		if err := json.Unmarshal(blob, &o); err != nil || o.Reqs != reqs {
			return nil, fmt.Errorf("process %d (ranks %v) asks for %s and this process for %+v: every rank must pass the same requirements",
				pi, w.job.procs[pi].Ranks, string(blob), reqs)
		}
	}
	size, _ := lsaLayout(w.hostOf) // checked by every caller
	set := &devSet{reqs: reqs, teams: map[int]*lsaBarriers{}, refs: len(w.local)}
	count := reqs.lsaBarrierCount()
	for _, c := range w.local {
		host := w.hostOf[c.rank]
		if set.teams[host] == nil {
			set.teams[host] = &lsaBarriers{count: count, size: size, first: host * size}
		}
	}
	w.dev.mu.Lock()
	n := w.dev.nDev
	w.dev.nDev++
	w.dev.mu.Unlock()
	if reqs.GinContextCount > 0 {
		g, err := w.buildGin(reqs, n, blobs)
		if err != nil {
			return nil, err
		}
		set.gin = g
	}
	if count == 0 {
		return set, nil
	}
	if w.hostShared() {
		err := w.mapBarriers(set, n)
		if err != nil && set.gin != nil {
			set.gin.close()
		}
		return set, err
	}
	for _, t := range set.teams {
		t.mem = goMemory(t.bytes())
		t.makeWaiters(w, nil)
	}
	return set, nil
}

// mapBarriers puts this host's barriers in a segment every process of
// the host maps (the first to open it creates it zeroed; the last to map
// it removes its name), n and the host naming it (hosts simulated on one
// machine share its segment directory).
func (w *world) mapBarriers(set *devSet, n int) error {
	j := w.job
	var t *lsaBarriers
	host := 0
	for h, tt := range set.teams {
		t, host = tt, h // one host: this process's
	}
	seg, err := shm.Open(j.dir, fmt.Sprintf("%s-dev-%d-h%d", j.prefix, n, host), t.bytes(), nil, joinWait(w.set.timeout), w.abort.Aborted)
	if err != nil {
		return fmt.Errorf("mapping the barriers: %w", err)
	}
	hostProcs := uint32(0)
	for pi := range j.procs {
		if j.local(pi) {
			hostProcs++
		}
	}
	seg.MarkMapped(hostProcs)
	set.seg, t.mem = seg, seg.Data()
	t.makeWaiters(w, j)
	// A waiter asleep on a bell hears of an abort only through it.
	w.abort.OnTrigger(func() {
		set.mu.Lock()
		defer set.mu.Unlock()
		if set.closed {
			return
		}
		for _, c := range w.local {
			for i := 0; i < t.count; i++ {
				t.bell(i, c.rank-t.first).Interrupt()
			}
		}
	})
	return nil
}

// Destroy releases the device communicator (ncclDevCommDestroy): no coop
// may be using it.
func (d *DevComm) Destroy() error {
	if d == nil || d.set == nil {
		return errors.New("ccl: DevComm.Destroy: no device communicator (nil)")
	}
	if d.destroyed.Swap(true) {
		return fmt.Errorf("ccl: DevComm.Destroy: rank %d's device communicator is destroyed already", d.Rank)
	}
	s := d.set
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs--
	if s.refs == 0 && s.gin != nil {
		s.gin.close()
	}
	if s.refs == 0 && s.seg != nil {
		s.closed = true
		s.seg.Close()
	}
	return nil
}

// QueryProperties reports what the device API offers on this
// communicator.
func (d *DevComm) QueryProperties() DevCommProperties {
	gin := "none"
	if d.set != nil && d.set.gin != nil {
		gin = "proxy"
	}
	return DevCommProperties{DeviceAPISupport: true, GinType: gin, NLsaTeams: d.NRanks / d.LsaSize}
}

// usable returns the error that makes a call on d fail.
func (d *DevComm) usable() error {
	if d == nil || d.set == nil {
		return errors.New("no device communicator (nil): want one from DevCommCreate")
	}
	if d.destroyed.Load() {
		return fmt.Errorf("rank %d's device communicator is destroyed", d.Rank)
	}
	return d.c.w.abort.Err()
}

// waiterFor is a new waiter for a local rank's barrier coop: on a bell
// when posters of other processes must reach it.
func (w *world) waiterFor(bell *proto.Bell) *proto.Waiter {
	var wt *proto.Waiter
	if bell != nil {
		wt = proto.NewBellWaiter(w.abort, w.set.timeout, bell)
	} else {
		wt = proto.NewWaiter(w.abort, w.set.timeout)
	}
	return wt
}

// String names the device communicator's place: its rank and LSA rank.
func (d *DevComm) String() string {
	return fmt.Sprintf("rank %d of %d (LSA rank %d of %d)", d.Rank, d.NRanks, d.LsaRank, d.LsaSize)
}
