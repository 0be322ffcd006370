package ccl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// ginFix is one process's ranks with a device communicator and two
// symmetric windows each, send and recv (by local index).
type ginFix struct {
	comms      []*Comm
	ds         []*DevComm
	send, recv []*Window
	bufs       [][2][]byte
	memAlloc   bool
}

// newGinFix makes the device communicators and windows of sendBytes and
// recvBytes per rank: MemAlloc'd when memAlloc (across processes).
func newGinFix(comms []*Comm, reqs DevCommRequirements, sendBytes, recvBytes int, memAlloc bool) (*ginFix, error) {
	n := len(comms)
	f := &ginFix{comms: comms, ds: make([]*DevComm, n), send: make([]*Window, n), recv: make([]*Window, n), bufs: make([][2][]byte, n), memAlloc: memAlloc}
	first := comms[0].Rank()
	err := perRankErr(comms, func(c *Comm) (err error) {
		k := c.Rank() - first
		if f.ds[k], err = c.DevCommCreate(reqs); err != nil {
			return err
		}
		for i, size := range []int{sendBytes, recvBytes} {
			if memAlloc {
				if f.bufs[k][i], err = c.MemAlloc(size); err != nil {
					return err
				}
			} else {
				f.bufs[k][i] = make([]byte, size)
			}
		}
		if f.send[k], err = c.WindowRegister(f.bufs[k][0], WinCollSymmetric); err != nil {
			return err
		}
		f.recv[k], err = c.WindowRegister(f.bufs[k][1], WinCollSymmetric)
		return err
	})
	return f, err
}

// close deregisters the windows, frees their memory and destroys the
// device communicators.
func (f *ginFix) close() error {
	first := f.comms[0].Rank()
	return perRankErr(f.comms, func(c *Comm) error {
		k := c.Rank() - first
		for _, w := range []*Window{f.send[k], f.recv[k]} {
			if err := c.WindowDeregister(w); err != nil {
				return err
			}
		}
		if f.memAlloc {
			for _, b := range f.bufs[k] {
				if err := c.MemFree(b); err != nil {
					return err
				}
			}
		}
		return f.ds[k].Destroy()
	})
}

// perDev runs fn for every local rank in its own goroutine (a kernel of
// one coop) and returns the errors joined.
func (f *ginFix) perDev(fn func(k int, d *DevComm) error) error {
	errs := make([]error, len(f.ds))
	var wg sync.WaitGroup
	for k, d := range f.ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = fn(k, d)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ginBlockByte is byte i of the block rank s puts to rank r in round k.
func ginBlockByte(s, r, k, i int) byte { return byte(s*37 + r*11 + k*5 + i*3 + i>>8) }

// ginOrdering: in each round every rank fills its send block for every
// peer (itself included), puts it into the peer's recv slot with
// SignalInc{its rank} and CounterInc{0}, on context peer%contexts; then
// waits for every source's signal to reach the round and checks the
// slot's bytes with plain loads (the race detector checks that the signal
// orders them), and acks with a signal (n + its rank) so the source may
// reuse the slot. Send blocks are reused after Flush (odd rounds) or the
// counter (even rounds). Signals: 2n; slots of b bytes, 2 per source.
func ginOrdering(f *ginFix, rounds, b int) error {
	return f.perDev(func(k int, d *DevComm) error {
		n := d.NRanks
		gins := make([]*Gin, d.GinContextCount)
		for c := range gins {
			var err error
			if gins[c], err = d.Gin(c); err != nil {
				return err
			}
		}
		world := TeamWorld(d)
		send, _ := d.LocalPointer(f.send[k], 0)
		recv, _ := d.LocalPointer(f.recv[k], 0)
		g0 := gins[0]
		for round := 1; round <= rounds; round++ {
			// Peers have checked round-1's slots: this round's (round%2)
			// were read two rounds ago.
			for p := range n {
				if err := g0.WaitSignal(n+p, uint64(round-1)); err != nil {
					return err
				}
			}
			// The send blocks of the last round have left.
			if round%2 == 1 {
				for _, g := range gins {
					if err := g.Flush(); err != nil {
						return err
					}
				}
			} else if err := g0.WaitCounter(0, uint64((round-1)*n)); err != nil {
				return err
			}
			for p := range n {
				blk := send[p*b : (p+1)*b]
				for i := range blk {
					blk[i] = ginBlockByte(d.Rank, p, round, i)
				}
				slot := (d.Rank*2 + round%2) * b
				if err := gins[p%len(gins)].Put(world, p, f.recv[k], slot, f.send[k], p*b, b, SignalInc{d.Rank}, CounterInc{0}); err != nil {
					return err
				}
			}
			for s := range n {
				if err := g0.WaitSignal(s, uint64(round)); err != nil {
					return err
				}
				slot := recv[(s*2+round%2)*b : (s*2+round%2+1)*b]
				for i, v := range slot {
					if want := ginBlockByte(s, d.Rank, round, i); v != want {
						return fmt.Errorf("round %d: rank %d's byte %d from rank %d is %d, want %d (seen after its signal)", round, d.Rank, i, s, v, want)
					}
				}
				if err := g0.Signal(world, s, SignalInc{n + d.Rank}); err != nil {
					return err
				}
			}
		}
		for _, g := range gins {
			if err := g.Flush(); err != nil {
				return err
			}
		}
		if got, err := g0.ReadCounter(0); err != nil || got != uint64(rounds*n) {
			return fmt.Errorf("rank %d: counter 0 is %d (%v) after %d puts", d.Rank, got, err, rounds*n)
		}
		// Every peer's last ack, then the signals read as counted.
		for p := range n {
			if err := g0.WaitSignal(n+p, uint64(rounds)); err != nil {
				return err
			}
		}
		for s := range n {
			if v, _ := g0.ReadSignal(s); v != uint64(rounds) {
				return fmt.Errorf("rank %d: signal %d is %d after %d rounds", d.Rank, s, v, rounds)
			}
		}
		return nil
	})
}

// ginAlltoall is the reference alltoall kernel of nccl-tests' -D 3 (mode
// 3: a GIN put of its block to every rank with SignalInc{0}, a wait for
// the n signals, then the world's GIN barrier) and -D 4 (mode 4: LSA
// stores to the ranks of its host, GIN puts to the others, a wait for
// their signals, then the hybrid barrier), count uint64 per block, each
// iteration checked exactly. A barrier opens every iteration too: no
// rank writes a recv block its owner is still checking.
func ginAlltoall(f *ginFix, mode, count, iters int) error {
	return f.perDev(func(k int, d *DevComm) error {
		n, bb := d.NRanks, 8*count
		gins := make([]*Gin, d.GinContextCount)
		for c := range gins {
			var err error
			if gins[c], err = d.Gin(c); err != nil {
				return err
			}
		}
		world := TeamWorld(d)
		var sync func() error
		if mode == 3 {
			bar, err := gins[0].Barrier(world, 0)
			if err != nil {
				return err
			}
			sync = bar.Sync
		} else {
			bar, err := d.Barrier(gins[0], 0)
			if err != nil {
				return err
			}
			sync = bar.Sync
		}
		send, _ := d.LocalPointer(f.send[k], 0)
		recv, _ := d.LocalPointer(f.recv[k], 0)
		remote := n
		if mode == 4 {
			remote = n - d.LsaSize
		}
		// Signal 0 goes on from the last kernel's count: every signal of
		// it arrived before its last barrier.
		base, err := gins[0].ReadSignal(0)
		if err != nil {
			return err
		}
		for it := range iters {
			for p := range n {
				for i := range count {
					binary.LittleEndian.PutUint64(send[p*bb+8*i:], alltoallValue(d.Rank, p, i, it))
				}
			}
			if err := sync(); err != nil {
				return err
			}
			for p := range n {
				lsaPeer := p - (d.Rank - d.LsaRank)
				if mode == 4 && lsaPeer >= 0 && lsaPeer < d.LsaSize {
					dst, err := d.LsaPointer(f.recv[k], d.Rank*bb, lsaPeer)
					if err != nil {
						return err
					}
					copy(dst[:bb], send[p*bb:(p+1)*bb])
					continue
				}
				if err := gins[p%len(gins)].Put(world, p, f.recv[k], d.Rank*bb, f.send[k], p*bb, bb, SignalInc{0}, nil); err != nil {
					return err
				}
			}
			if err := gins[0].WaitSignal(0, base+uint64(remote*(it+1))); err != nil {
				return err
			}
			if err := sync(); err != nil {
				return err
			}
			for s := range n {
				for i := range count {
					if got, want := binary.LittleEndian.Uint64(recv[s*bb+8*i:]), alltoallValue(s, d.Rank, i, it); got != want {
						return fmt.Errorf("-D %d iteration %d: rank %d's element %d from rank %d is %#x, want %#x", mode, it, d.Rank, i, s, got, want)
					}
				}
			}
			// The send buffer is rewritten next iteration.
			for _, g := range gins {
				if err := g.Flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func alltoallValue(src, dst, i, it int) uint64 {
	return uint64(src+1)<<48 | uint64(dst+1)<<40 | uint64(it)<<24 | uint64(i)
}

// ginBarriers: in each round every rank writes the round into its slot
// (2 per rank, alternating) at every peer, then syncs: with the world's
// GIN barrier (PutValue on the barrier's context to every rank), and with
// the hybrid barrier (LSA stores to its host's ranks, PutValue to its
// rail's); every slot written must then hold the round, read with plain
// loads.
func ginBarriers(f *ginFix, rounds int) error {
	return f.perDev(func(k int, d *DevComm) error {
		g, err := d.Gin(0)
		if err != nil {
			return err
		}
		world, rail := TeamWorld(d), TeamRail(d)
		wbar, err := g.Barrier(world, 0)
		if err != nil {
			return err
		}
		hbar, err := d.Barrier(g, 1)
		if err != nil {
			return err
		}
		recv, _ := d.LocalPointer(f.recv[k], 0)
		slot := func(s, round int) int { return 8 * (2*s + round%2) }
		check := func(kind string, s, round int) error {
			if got := binary.LittleEndian.Uint64(recv[slot(s, round):]); got != uint64(round) {
				return fmt.Errorf("%s barrier, round %d: rank %d's slot of rank %d holds %d", kind, round, d.Rank, s, got)
			}
			return nil
		}
		for round := 1; round <= rounds; round++ {
			for p := range d.NRanks {
				if err := g.PutValue(world, p, f.recv[k], slot(d.Rank, round), uint64(round), nil); err != nil {
					return err
				}
			}
			if err := wbar.Sync(); err != nil {
				return err
			}
			for s := range d.NRanks {
				if err := check("GIN world", s, round); err != nil {
					return err
				}
			}
		}
		// The hybrid barrier: its own slots (offset by 4 rounds' parity
		// area, distinct from the world barrier's: use rounds+round).
		for round := rounds + 1; round <= 2*rounds; round++ {
			for l := range d.LsaSize {
				dst, err := d.LsaPointer(f.recv[k], slot(d.Rank, round), l)
				if err != nil {
					return err
				}
				binary.LittleEndian.PutUint64(dst, uint64(round))
			}
			for p := range rail.NRanks {
				if p != rail.Rank {
					if err := g.PutValue(rail, p, f.recv[k], slot(d.Rank, round), uint64(round), nil); err != nil {
						return err
					}
				}
			}
			if err := hbar.Sync(); err != nil {
				return err
			}
			for l := range d.LsaSize {
				if err := check("hybrid (LSA)", d.Rank-d.LsaRank+l, round); err != nil {
					return err
				}
			}
			for p := range rail.NRanks {
				if err := check("hybrid (rail)", TeamRankToWorld(d, rail, p), round); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func ginReqs(contexts, signals int) DevCommRequirements {
	return DevCommRequirements{LsaBarrierCount: 2, RailGinBarrierCount: 2, GinContextCount: contexts, GinSignalCount: signals, GinCounterCount: 1}
}

// ginLayouts are the one-process layouts: ranks, ranks per simulated host.
var ginLayouts = []struct{ n, perHost int }{{1, 0}, {3, 0}, {4, 2}, {6, 2}}

// TestGinPutSignalOrdering: puts with signals and counters between every
// pair of ranks (a rank and itself too), in one process and across hosts
// simulated in it, the data checked after each signal.
func TestGinPutSignalOrdering(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 60
	}
	for _, l := range ginLayouts {
		t.Run(fmt.Sprintf("n=%d/perHost=%d", l.n, l.perHost), func(t *testing.T) {
			comms := initT(t, l.n, Config{RanksPerHost: l.perHost})
			const b = 200
			f, err := newGinFix(comms, ginReqs(2, 2*l.n), l.n*b, 2*l.n*b, false)
			if err != nil {
				t.Fatal(err)
			}
			if p := f.ds[0].QueryProperties(); p.GinType != "proxy" {
				t.Errorf("QueryProperties: %+v, want GinType proxy", p)
			}
			if err := ginOrdering(f, rounds, b); err != nil {
				t.Fatal(err)
			}
			if err := f.close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGinAlltoallKernels: nccl-tests' alltoall -D 3 and -D 4 kernels,
// checked exactly.
func TestGinAlltoallKernels(t *testing.T) {
	for _, l := range ginLayouts {
		for _, mode := range []int{3, 4} {
			t.Run(fmt.Sprintf("D%d/n=%d/perHost=%d", mode, l.n, l.perHost), func(t *testing.T) {
				comms := initT(t, l.n, Config{RanksPerHost: l.perHost})
				const count = 300
				f, err := newGinFix(comms, ginReqs(3, 1), 8*count*l.n, 8*count*l.n, false)
				if err != nil {
					t.Fatal(err)
				}
				if err := ginAlltoall(f, mode, count, 8); err != nil {
					t.Fatal(err)
				}
				if err := f.close(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestGinBarriers: the world's GIN barrier and the hybrid barrier order
// the puts and stores before them.
func TestGinBarriers(t *testing.T) {
	for _, l := range ginLayouts {
		t.Run(fmt.Sprintf("n=%d/perHost=%d", l.n, l.perHost), func(t *testing.T) {
			comms := initT(t, l.n, Config{RanksPerHost: l.perHost})
			f, err := newGinFix(comms, ginReqs(1, 1), 8, 16*l.n, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := ginBarriers(f, 100); err != nil {
				t.Fatal(err)
			}
			if err := f.close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGinTimeouts: a signal that never comes and a rank that never
// arrives fail after the timeout, the barrier's naming the late rank
// alone.
func TestGinTimeouts(t *testing.T) {
	comms := initT(t, 3, Config{Timeout: 300 * time.Millisecond})
	ds := devT(t, comms, ginReqs(1, 1))
	g, err := ds[0].Gin(0)
	if err != nil {
		t.Fatal(err)
	}
	err = g.WaitSignal(0, 1)
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("WaitSignal: %v, want a timeout", err)
	}
	wantErr(t, "WaitSignal", err, "signal 0 to reach 1")

	comms = initT(t, 3, Config{Timeout: 300 * time.Millisecond})
	ds = devT(t, comms, ginReqs(1, 1))
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := ds[r].Gin(0)
			if err == nil {
				var bar *GinBarrierSession
				if bar, err = g.Barrier(TeamWorld(ds[r]), 1); err == nil {
					err = bar.Sync()
				}
			}
			errs[r] = err
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "rank 2 to arrive") || strings.Contains(err.Error(), "rank 1,") {
			t.Errorf("rank %d: %v, want a timeout naming rank 2 alone", r, err)
		}
	}
}

// TestGinBadInputs: every misuse gets an error naming it.
func TestGinBadInputs(t *testing.T) {
	comms := initT(t, 2, Config{Timeout: 2 * time.Second})
	for _, tc := range []struct {
		reqs DevCommRequirements
		want string
	}{
		{DevCommRequirements{GinCounterCount: 1}, "GinCounterCount is 1 but GinContextCount is 0"},
		{DevCommRequirements{RailGinBarrierCount: 1}, "RailGinBarrierCount is 1 but GinContextCount is 0"},
		{DevCommRequirements{GinContextCount: 65}, "at most 64"},
		{DevCommRequirements{GinContextCount: -1}, "GinContextCount is -1"},
	} {
		_, err := comms[0].DevCommCreate(tc.reqs)
		wantErr(t, fmt.Sprintf("DevCommCreate(%+v)", tc.reqs), err, tc.want)
	}
	plain := devT(t, comms, DevCommRequirements{LsaBarrierCount: 1})
	_, err := plain[0].Gin(0)
	wantErr(t, "Gin without contexts", err, "no GIN contexts", "GinContextCount")
	if p := plain[0].QueryProperties(); p.GinType != "none" {
		t.Errorf("QueryProperties without GIN: %+v", p)
	}

	ds := devT(t, comms, DevCommRequirements{GinContextCount: 2, GinSignalCount: 2, GinCounterCount: 1, RailGinBarrierCount: 1})
	d := ds[0]
	if d.GinContextCount != 2 || d.GinSignalCount != 2 || d.GinCounterCount != 1 || d.GinBarrierCount != 1 {
		t.Errorf("DevComm's GIN counts: %+v", d)
	}
	_, err = d.Gin(2)
	wantErr(t, "Gin(2)", err, "context 2 is out of range", "0..1")
	g, err := d.Gin(1)
	if err != nil {
		t.Fatal(err)
	}
	ws := winT(t, comms, [][]byte{make([]byte, 16), make([]byte, 8)}, WinCollSymmetric)
	world := TeamWorld(d)
	wantErr(t, "Put past the peer's part", g.Put(world, 1, ws[0], 4, ws[0], 0, 8, nil, nil), "bytes 4..12", "rank 1's part", "8 bytes")
	wantErr(t, "Put past the source", g.Put(world, 1, ws[0], 0, ws[0], 12, 8, nil, nil), "source bytes 12..20")
	wantErr(t, "Put to peer 2 of 2", g.Put(world, 2, ws[0], 0, ws[0], 0, 8, nil, nil), "peer 2 is out of range")
	wantErr(t, "Put with signal 2", g.Put(world, 1, ws[0], 0, ws[0], 0, 8, SignalInc{2}, nil), "signal 2 is out of range", "0..1")
	wantErr(t, "Put with counter 1", g.Put(world, 1, ws[0], 0, ws[0], 0, 8, nil, CounterInc{1}), "counter 1 is out of range")
	wantErr(t, "Put with rank 1's window", g.Put(world, 1, ws[1], 0, ws[0], 0, 8, nil, nil), "rank 1's handle")
	wantErr(t, "Signal without action", g.Signal(world, 1, nil), "no remote action")
	wantErr(t, "PutValue past the part", g.PutValue(world, 1, ws[0], 1, 7, nil), "bytes 1..9")
	_, err = g.ReadSignal(-1)
	wantErr(t, "ReadSignal(-1)", err, "signal -1 is out of range")
	wantErr(t, "WaitCounter(3)", g.WaitCounter(3, 1), "counter 3 is out of range")
	_, err = g.Barrier(world, 1)
	wantErr(t, "Barrier index 1", err, "barrier 1 is out of range")
	_, err = d.Barrier(g, 0)
	wantErr(t, "hybrid Barrier without LSA barriers", err, "no LSA barriers")
	if err := d.Destroy(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Put after Destroy", g.Put(world, 1, ws[0], 0, ws[0], 0, 8, nil, nil), "destroyed")
}

// TestGinSignalRolls: signals and counters compare modulo their width.
func TestGinSignalRolls(t *testing.T) {
	comms := initT(t, 1, Config{Timeout: 5 * time.Second})
	ds := devT(t, comms, ginReqs(1, 1))
	g, _ := ds[0].Gin(0)
	ws := winT(t, comms, [][]byte{make([]byte, 8)}, WinCollSymmetric)
	world := TeamWorld(ds[0])
	// From 2^64-2, three adds roll over to 1: a wait for 2^64-1 then 1.
	if err := g.Signal(world, 0, SignalAdd{0, 1<<64 - 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := g.PutValue(world, 0, ws[0], 0, uint64(i), SignalInc{0}); err != nil {
			t.Fatal(err)
		}
	}
	for _, least := range []uint64{1<<64 - 1, 0, 1} {
		if err := g.WaitSignal(0, least); err != nil {
			t.Fatalf("WaitSignal(%d): %v", least, err)
		}
	}
	if v, _ := g.ReadSignal(0); v != 1 {
		t.Errorf("signal 0 is %d, want 1", v)
	}
	if err := g.ResetSignal(0); err != nil {
		t.Fatal(err)
	}
	if v, _ := g.ReadSignal(0); v != 0 {
		t.Errorf("signal 0 after reset is %d", v)
	}
	// A counter of 56 bits: 2^56-1 then one more is 0 (and >= 2^56-1).
	g.r.counters[0].Store(1<<56 - 1)
	if err := g.Put(world, 0, ws[0], 0, ws[0], 0, 8, nil, CounterInc{0}); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitCounter(0, 0); err != nil {
		t.Fatal(err)
	}
	if v, _ := g.ReadCounter(0); v != 0 {
		t.Errorf("counter 0 is %d, want 0 (rolled over 56 bits)", v)
	}
	if err := g.WaitCounter(0, 1<<56-1); err != nil {
		t.Errorf("WaitCounter(2^56-1) after the roll: %v", err)
	}
}
