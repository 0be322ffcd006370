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

// devT creates every rank's device communicator (destroyed when the test
// ends).
func devT(t *testing.T, comms []*Comm, reqs DevCommRequirements) []*DevComm {
	t.Helper()
	ds := make([]*DevComm, len(comms))
	if err := perRankErr(comms, func(c *Comm) (err error) {
		ds[c.Rank()], err = c.DevCommCreate(reqs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range ds {
			d.Destroy()
		}
	})
	return ds
}

// winT registers bufs[r] as every rank's part of a window.
func winT(t *testing.T, comms []*Comm, bufs [][]byte, flags WinFlags) []*Window {
	t.Helper()
	ws := make([]*Window, len(comms))
	if err := perRankErr(comms, func(c *Comm) (err error) {
		ws[c.Rank()], err = c.WindowRegister(bufs[c.Rank()], flags)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ws
}

// lsaAllReduce is the reference "kernel" of nccl-tests' allreduce -D 1
// on one rank: v coops (goroutines), coop k summing its share of the
// count int64 elements (a share per coop of every LSA rank) across every
// LSA peer's send window and storing the sum in every peer's recv window, between two barrier syncs (the
// first: the peers' send buffers are written and their recv buffers free;
// the second: every peer's sums have landed).
func lsaAllReduce(d *DevComm, send, recv *Window, count, v int) error {
	var wg sync.WaitGroup
	errs := make([]error, v)
	for k := 0; k < v; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = lsaAllReduceCoop(d, send, recv, count, v, k)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func lsaAllReduceCoop(d *DevComm, send, recv *Window, count, v, k int) error {
	bar, err := d.LsaBarrier(k)
	if err != nil {
		return err
	}
	if err := bar.Sync(); err != nil {
		return err
	}
	srcs, dsts := make([][]byte, d.LsaSize), make([][]byte, d.LsaSize)
	for p := range d.LsaSize {
		if srcs[p], err = d.LsaPointer(send, 0, p); err != nil {
			return err
		}
		if dsts[p], err = d.LsaPointer(recv, 0, p); err != nil {
			return err
		}
	}
	// The elements split into v*LsaSize shares, one per coop of every LSA
	// rank: coop k of LSA rank l sums share k*LsaSize+l over the peers
	// and stores it to every peer.
	share, shares := k*d.LsaSize+d.LsaRank, v*d.LsaSize
	lo, hi := share*count/shares, (share+1)*count/shares
	for i := lo; i < hi; i++ {
		var sum uint64
		for _, s := range srcs {
			sum += binary.LittleEndian.Uint64(s[8*i:])
		}
		for _, dst := range dsts {
			binary.LittleEndian.PutUint64(dst[8*i:], sum)
		}
	}
	return bar.Sync()
}

// allReduceInput is rank r's element i of iteration it.
func allReduceInput(r, i, it int) uint64 { return uint64(r+1)*1_000_003 + uint64(i)*7 + uint64(it)<<32 }

// checkLsaAllReduce runs iters allreduces of count elements with v coops
// on every rank and checks every rank's sums exactly.
func checkLsaAllReduce(ds []*DevComm, send, recv []*Window, count, v, iters int) error {
	for it := range iters {
		errs := make(chan error, len(ds))
		var wg sync.WaitGroup
		for k, d := range ds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine, _ := d.LocalPointer(send[k], 0)
				for i := range count {
					binary.LittleEndian.PutUint64(mine[8*i:], allReduceInput(d.Rank, i, it))
				}
				if err := lsaAllReduce(d, send[k], recv[k], count, v); err != nil {
					errs <- err
					return
				}
				out, _ := d.LocalPointer(recv[k], 0)
				first := d.Rank - d.LsaRank
				for i := range count {
					var want uint64
					for p := range d.LsaSize {
						want += allReduceInput(first+p, i, it)
					}
					if got := binary.LittleEndian.Uint64(out[8*i:]); got != want {
						errs <- fmt.Errorf("iteration %d: rank %d's element %d is %d, want %d", it, d.Rank, i, got, want)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// TestLsaAllReduceKernel runs the reference kernel at 1, 2, 3, 5 and 8
// ranks in one process, and at 2 hosts of 2 (its LSA teams, one per
// host, each summing its own ranks).
func TestLsaAllReduceKernel(t *testing.T) {
	for _, tc := range []struct{ n, perHost int }{{1, 0}, {2, 0}, {3, 0}, {5, 0}, {8, 0}, {4, 2}} {
		t.Run(fmt.Sprintf("n=%d/perHost=%d", tc.n, tc.perHost), func(t *testing.T) {
			comms := initT(t, tc.n, Config{RanksPerHost: tc.perHost})
			const v, count = 4, 1000
			ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: v})
			sendBufs, recvBufs := make([][]byte, tc.n), make([][]byte, tc.n)
			for r := range tc.n {
				sendBufs[r], recvBufs[r] = make([]byte, 8*count), make([]byte, 8*count)
			}
			send := winT(t, comms, sendBufs, WinCollSymmetric)
			recv := winT(t, comms, recvBufs, WinCollSymmetric)
			if err := checkLsaAllReduce(ds, send, recv, count, v, 5); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWindowsSymmetric: every rank's part has its own size; each reads
// every peer's part, in full, through LsaPointer, and the window has the
// same index everywhere.
func TestWindowsSymmetric(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			comms := initT(t, n, Config{})
			ds := devT(t, comms, DevCommRequirements{BarrierCount: 1})
			bufs := make([][]byte, n)
			for r := range bufs {
				bufs[r] = pattern(r, 16*(r+1))
			}
			first := winT(t, comms, make([][]byte, n), WinCollSymmetric) // empty parts are fine
			ws := winT(t, comms, bufs, WinCollSymmetric)
			if err := perRankErr(comms, func(c *Comm) error {
				d, w := ds[c.Rank()], ws[c.Rank()]
				if w.Index() != 1 || first[c.Rank()].Index() != 0 {
					return fmt.Errorf("rank %d: window indices %d, %d, want 0, 1", c.Rank(), first[c.Rank()].Index(), w.Index())
				}
				if w.Size() != 16*(c.Rank()+1) {
					return fmt.Errorf("rank %d: Size %d, want %d", c.Rank(), w.Size(), 16*(c.Rank()+1))
				}
				for p := range n {
					got, err := d.LsaPointer(w, 8, p)
					if err != nil {
						return err
					}
					if string(got) != string(pattern(p, 16*(p+1))[8:]) {
						return fmt.Errorf("rank %d reads rank %d's part from 8 as %x, want %x", c.Rank(), p, got, pattern(p, 16*(p+1))[8:])
					}
					if peer, err := d.PeerPointer(w, 8, p); err != nil || &peer[0] != &got[0] {
						return fmt.Errorf("rank %d: PeerPointer(%d) differs from LsaPointer: %v", c.Rank(), p, err)
					}
				}
				if err := c.WindowDeregister(w); err != nil {
					return err
				}
				if _, err := d.LsaPointer(w, 0, 0); err == nil || !strings.Contains(err.Error(), "deregistered") {
					return fmt.Errorf("rank %d: LsaPointer on a deregistered window: %v, want an error saying so", c.Rank(), err)
				}
				return c.WindowDeregister(first[c.Rank()])
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLsaBarrierOrdering: in each of many rounds, every coop of every
// rank stores its round into its own slot of its window, syncs, and
// reads every peer's slot: each must hold this round (plain stores and
// loads, so -race checks the barrier's happens-before too). Slots
// alternate by round, so one sync per round suffices: a rank writes a
// slot again only two rounds later, after every peer's read of it. Four
// coops (indices) run at once; hosts of 2 ranks sync within each.
func TestLsaBarrierOrdering(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	for _, tc := range []struct{ n, perHost int }{{3, 0}, {4, 2}} {
		t.Run(fmt.Sprintf("n=%d/perHost=%d", tc.n, tc.perHost), func(t *testing.T) {
			const v = 4
			comms := initT(t, tc.n, Config{RanksPerHost: tc.perHost})
			ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: v})
			bufs := make([][]byte, tc.n)
			for r := range bufs {
				bufs[r] = make([]byte, v*2*8)
			}
			ws := winT(t, comms, bufs, WinCollSymmetric)
			var wg sync.WaitGroup
			errs := make(chan error, tc.n*v)
			for r, d := range ds {
				for k := range v {
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs <- orderingCoop(d, ws[r], k, rounds)
					}()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func orderingCoop(d *DevComm, w *Window, k, rounds int) error {
	bar, err := d.LsaBarrier(k)
	if err != nil {
		return err
	}
	mine, _ := d.LocalPointer(w, 0)
	for round := 1; round <= rounds; round++ {
		slot := 8 * (2*k + round%2)
		binary.LittleEndian.PutUint64(mine[slot:], uint64(round*100+d.Rank))
		if err := bar.Sync(); err != nil {
			return err
		}
		for p := range d.LsaSize {
			theirs, err := d.LsaPointer(w, slot, p)
			if err != nil {
				return err
			}
			peer := d.Rank - d.LsaRank + p
			if got := binary.LittleEndian.Uint64(theirs); got != uint64(round*100+peer) {
				return fmt.Errorf("coop %d of rank %d, round %d: rank %d's slot holds %d, want %d", k, d.Rank, round, peer, got, round*100+peer)
			}
		}
	}
	return nil
}

// TestLsaBarrierTimeout: rank 2 never arrives; the others' waits fail
// after the timeout naming it (and only it), and abort the communicator.
func TestLsaBarrierTimeout(t *testing.T) {
	comms := initT(t, 3, Config{Timeout: 300 * time.Millisecond})
	ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: 1})
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bar, err := ds[r].LsaBarrier(0)
			if err == nil {
				err = bar.Sync()
			}
			errs[r] = err
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "rank 2 to arrive") || strings.Contains(err.Error(), "rank 1 to") {
			t.Errorf("rank %d: %v, want a timeout naming rank 2 alone", r, err)
		}
	}
	if err := comms[2].Synchronize(); !errors.Is(err, ErrAborted) {
		t.Errorf("the late rank's communicator: %v, want it aborted", err)
	}
}

// TestLsaBarrierAbort: a wait fails promptly (not after the 20 s
// timeout) once another rank aborts.
func TestLsaBarrierAbort(t *testing.T) {
	comms := initT(t, 2, Config{})
	ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: 1})
	bar, err := ds[0].LsaBarrier(0)
	if err != nil {
		t.Fatal(err)
	}
	aborted := make(chan struct{})
	defer func() { <-aborted }() // before the cleanup destroys comms[1] again
	go func() {
		defer close(aborted)
		time.Sleep(50 * time.Millisecond)
		comms[1].Abort()
	}()
	start := time.Now()
	if err := bar.Sync(); !errors.Is(err, ErrAborted) {
		t.Fatalf("Sync: %v, want ErrAborted", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the wait took %v to see the abort", d)
	}
}

// wantErr fails unless err holds every one of parts.
func wantErr(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one saying %q", what, parts)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want it to say %q", what, err, p)
		}
	}
}

// TestDevBadInputs: every misuse gets an error naming it.
func TestDevBadInputs(t *testing.T) {
	comms := initT(t, 2, Config{Timeout: 2 * time.Second})
	c := comms[0]
	for _, tc := range []struct {
		reqs DevCommRequirements
		want string
	}{
		{DevCommRequirements{LsaMultimem: true}, "multimem (NVLink SHARP) has no CPU counterpart"},
		{DevCommRequirements{GinSignalCount: 4}, "need a GIN context"},
		{DevCommRequirements{LsaBarrierCount: -1}, "LsaBarrierCount is -1"},
	} {
		_, err := c.DevCommCreate(tc.reqs)
		wantErr(t, fmt.Sprintf("DevCommCreate(%+v)", tc.reqs), err, tc.want)
	}
	if _, err := c.WindowRegister(nil, 4); err == nil {
		t.Errorf("WindowRegister with flags 4: no error")
	}
	// The ranks disagree: the requirements, then the order of calls.
	errs := make([]error, 2)
	perRank(comms, func(c *Comm) { _, errs[c.Rank()] = c.DevCommCreate(DevCommRequirements{LsaBarrierCount: 1 + c.Rank()}) })
	wantErr(t, "DevCommCreate with different requirements", errs[0], "same requirements")
	perRank(comms, func(c *Comm) {
		if c.Rank() == 0 {
			_, errs[0] = c.WindowRegister(nil, WinCollSymmetric)
		} else {
			_, errs[1] = c.DevCommCreate(DevCommRequirements{})
		}
	})
	wantErr(t, "WindowRegister beside DevCommCreate", errs[0], "same order")

	ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: 2})
	d := ds[0]
	for _, i := range []int{-1, 2} {
		_, err := d.LsaBarrier(i)
		wantErr(t, fmt.Sprintf("LsaBarrier(%d)", i), err, "out of range", "0..1")
	}
	ws := winT(t, comms, [][]byte{make([]byte, 8), make([]byte, 16)}, WinCollSymmetric)
	_, err := d.LsaPointer(ws[1], 0, 1)
	wantErr(t, "LsaPointer with rank 1's handle on rank 0", err, "rank 1's handle")
	_, err = d.LsaPointer(ws[0], 17, 1)
	wantErr(t, "LsaPointer past the peer's part", err, "offset 17", "0..16")
	_, err = d.LsaPointer(ws[0], 0, 2)
	wantErr(t, "LsaPointer to LSA peer 2 of 2", err, "out of range")
	_, err = d.LsaPointer(nil, 0, 0)
	wantErr(t, "LsaPointer(nil)", err, "nil")
	other := initT(t, 1, Config{})
	ow := winT(t, other, [][]byte{make([]byte, 8)}, WinCollSymmetric)
	_, err = d.LsaPointer(ow[0], 0, 0)
	wantErr(t, "LsaPointer with another communicator's window", err, "another communicator")
	if err := perRankErr(comms, func(c *Comm) error { return c.WindowDeregister(ws[c.Rank()]) }); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "WindowDeregister twice", c.WindowDeregister(ws[0]), "deregistered already")

	// A window for this rank's use only.
	local := winT(t, comms, [][]byte{make([]byte, 8), make([]byte, 8)}, WinDefault)
	if _, err := d.LocalPointer(local[0], 0); err != nil {
		t.Errorf("LocalPointer on a WinDefault window: %v", err)
	}
	_, err = d.LsaPointer(local[0], 0, 1)
	wantErr(t, "a peer's part of a WinDefault window", err, "without WinCollSymmetric")

	// MemAlloc in one process, and MemFree's checks.
	buf, err := c.MemAlloc(64)
	if err != nil || len(buf) != 64 {
		t.Fatalf("MemAlloc(64): %d bytes, %v", len(buf), err)
	}
	wantErr(t, "MemFree of a buffer not from MemAlloc", c.MemFree(make([]byte, 8)), "not one MemAlloc returned")
	if err := c.MemFree(buf); err != nil {
		t.Errorf("MemFree: %v", err)
	}
	wantErr(t, "MemFree twice", c.MemFree(buf), "freed already")
	_, err = c.MemAlloc(0)
	wantErr(t, "MemAlloc(0)", err, "want at least 1")

	if err := d.Destroy(); err != nil {
		t.Errorf("Destroy: %v", err)
	}
	wantErr(t, "Destroy twice", d.Destroy(), "destroyed already")
	_, err = d.LsaBarrier(0)
	wantErr(t, "LsaBarrier after Destroy", err, "destroyed")
}

// TestDevHosts: hosts simulated in one process make LSA teams of their
// ranks; a peer of another host has no pointer, and hosts of unequal
// sizes are refused.
func TestDevHosts(t *testing.T) {
	comms := initT(t, 4, Config{RanksPerHost: 2})
	ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: 1})
	d := ds[3]
	if d.LsaRank != 1 || d.LsaSize != 2 || d.NRanks != 4 || d.Rank != 3 {
		t.Errorf("rank 3: %+v, want LSA rank 1 of 2", d)
	}
	if p := d.QueryProperties(); p != (DevCommProperties{DeviceAPISupport: true, GinType: "none", NLsaTeams: 2}) {
		t.Errorf("QueryProperties: %+v", p)
	}
	if r := TeamRail(d); r != (Team{NRanks: 2, Rank: 1, Stride: 2}) {
		t.Errorf("rail team %+v", r)
	}
	bufs := [][]byte{pattern(0, 8), pattern(1, 8), pattern(2, 8), pattern(3, 8)}
	ws := winT(t, comms, bufs, WinCollSymmetric)
	if p, err := d.PeerPointer(ws[3], 0, 0); p != nil || err != nil {
		t.Errorf("PeerPointer to rank 0 of another host: %v, %v; want nil, nil", p, err)
	}
	if p, err := d.PeerPointer(ws[3], 0, 2); err != nil || string(p) != string(bufs[2]) {
		t.Errorf("PeerPointer to rank 2: %x, %v; want %x", p, err, bufs[2])
	}
	_, err := d.LsaPointer(ws[3], 0, 2)
	wantErr(t, "LsaPointer to LSA peer 2 of 2", err, "out of range: want 0..1")

	uneven := initT(t, 5, Config{RanksPerHost: 2})
	errs := make([]error, 5)
	perRank(uneven, func(c *Comm) { _, errs[c.Rank()] = c.DevCommCreate(DevCommRequirements{}) })
	wantErr(t, "DevCommCreate over hosts of 2, 2 and 1 ranks", errs[0], "same number of consecutive ranks")
}
