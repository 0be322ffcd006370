package ccl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCoopWorkers checks the workers and the waiting goroutines of every
// small layout: at least one worker, at most one per coop, one per coop
// while the processors last, no more workers than processors unless one a
// rank, and the waiting goroutines every rank's workers (and, for a
// stream, the driving goroutine).
func TestCoopWorkers(t *testing.T) {
	for coops := 1; coops <= 20; coops++ {
		for local := 1; local <= 12; local++ {
			for procs := 1; procs <= 70; procs++ {
				for _, inline := range []bool{false, true} {
					w, waiting := coopWorkers(coops, local, procs, inline)
					free, driver := procs, 0
					if !inline {
						free, driver = procs-1, 1
					}
					where := fmt.Sprintf("coops %d, local %d, procs %d, inline %v: %d workers, %d waiting", coops, local, procs, inline, w, waiting)
					switch {
					case w < 1 || w > coops:
						t.Fatalf("%s: want 1..%d workers", where, coops)
					case waiting != local*w+driver:
						t.Fatalf("%s: want %d waiting", where, local*w+driver)
					case coops*local <= free && w != coops:
						t.Fatalf("%s: the processors fit a worker per coop", where)
					case w > 1 && local*w > free:
						t.Fatalf("%s: more workers than processors", where)
					}
				}
			}
		}
	}
}

// streamsT makes every rank's stream with the given workers (by rank),
// their waits spinning long (spin) or backing off and parking, closed
// when the test ends.
func streamsT(t *testing.T, ds []*DevComm, o DevStreamOptions, workers func(r int) int, spin bool) []*DevStream {
	t.Helper()
	ss := make([]*DevStream, len(ds))
	procs := 1 // waits that back off and park early
	if spin {
		procs = 64 // waits that spin long
	}
	for r, d := range ds {
		ss[r] = d.newStream(o, workers(r), len(ds)*workers(r), procs)
	}
	t.Cleanup(func() {
		for _, s := range ss {
			s.Close()
		}
	})
	return ss
}

// TestDevStreamWaves runs the reference LSA allreduce kernel through
// streams whose coops outnumber their workers, the ranks running
// different numbers of workers (waves of different shapes), inline and
// on stream goroutines, several launches queued before each Synchronize,
// and checks every sum exactly.
func TestDevStreamWaves(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		for _, inline := range []bool{false, true} {
			for _, spin := range []bool{false, true} {
				t.Run(fmt.Sprintf("n=%d/inline=%v/spin=%v", n, inline, spin), func(t *testing.T) {
					comms := initT(t, n, Config{})
					const v, count, iters, queued = 7, 700, 4, 3
					ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: v})
					ss := streamsT(t, ds, DevStreamOptions{Coops: v, Inline: inline}, func(r int) int { return 1 + r%3 }, spin)
					bufs := make([][]byte, 2*n)
					for i := range bufs {
						bufs[i] = make([]byte, 8*count*queued)
					}
					send := winT(t, comms, bufs[:n], WinCollSymmetric)
					recv := winT(t, comms, bufs[n:2*n], WinCollSymmetric)
					err := perRankErr(comms, func(c *Comm) error {
						r := c.Rank()
						d, s := ds[r], ss[r]
						mine, _ := d.LocalPointer(send[r], 0)
						out, _ := d.LocalPointer(recv[r], 0)
						for it := range iters {
							// queued launches, each on its own slice of the windows
							for q := range queued {
								for i := range count {
									binary.LittleEndian.PutUint64(mine[8*(q*count+i):], allReduceInput(r, i, it*queued+q))
								}
							}
							for q := range queued {
								err := s.Launch(func(k int) error {
									return sliceAllReduceCoop(d, send[r], recv[r], q*count, count, v, k)
								})
								if err != nil {
									return err
								}
							}
							if err := s.Synchronize(); err != nil {
								return err
							}
							for q := range queued {
								for i := range count {
									var want uint64
									for p := range n {
										want += allReduceInput(p, i, it*queued+q)
									}
									if got := binary.LittleEndian.Uint64(out[8*(q*count+i):]); got != want {
										return fmt.Errorf("iteration %d, launch %d: rank %d's element %d is %d, want %d", it, q, r, i, got, want)
									}
								}
							}
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// sliceAllReduceCoop is lsaAllReduceCoop on the count elements from
// element first of the windows.
func sliceAllReduceCoop(d *DevComm, send, recv *Window, first, count, v, k int) error {
	bar, err := d.LsaBarrier(k)
	if err != nil {
		return err
	}
	if err := bar.Sync(); err != nil {
		return err
	}
	share, shares := k*d.LsaSize+d.LsaRank, v*d.LsaSize
	lo, hi := first+share*count/shares, first+(share+1)*count/shares
	for i := lo; i < hi; i++ {
		var sum uint64
		for p := range d.LsaSize {
			src, _ := d.LsaPointer(send, 0, p)
			sum += binary.LittleEndian.Uint64(src[8*i:])
		}
		for p := range d.LsaSize {
			dst, _ := d.LsaPointer(recv, 0, p)
			binary.LittleEndian.PutUint64(dst[8*i:], sum)
		}
	}
	return bar.Sync()
}

// TestDevStreamOrder: launches run one after another in launch order,
// and a launch's phases each end on every coop before the next starts.
func TestDevStreamOrder(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprint("inline=", inline), func(t *testing.T) {
			comms := initT(t, 1, Config{})
			const v, launches = 6, 50
			ds := devT(t, comms, DevCommRequirements{})
			s := streamsT(t, ds, DevStreamOptions{Coops: v, Inline: inline}, func(int) int { return 4 }, false)[0]
			var mu sync.Mutex
			var log []string
			var staged [v]atomic.Int32
			var bad atomic.Value
			for l := range launches {
				stage := func(k int) error {
					staged[k].Store(int32(l + 1))
					return nil
				}
				body := func(k int) error {
					for j := range v {
						if got := staged[j].Load(); got != int32(l+1) {
							bad.Store(fmt.Sprintf("launch %d, coop %d: coop %d's stage is at launch %d", l, k, j, got-1))
						}
					}
					mu.Lock()
					log = append(log, fmt.Sprint(l))
					mu.Unlock()
					return nil
				}
				if err := s.Launch(stage, body); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if b := bad.Load(); b != nil {
				t.Fatal(b)
			}
			if len(log) != launches*v {
				t.Fatalf("%d coop runs, want %d", len(log), launches*v)
			}
			for i, e := range log {
				if e != fmt.Sprint(i/v) {
					t.Fatalf("run %d belongs to launch %s, want %d: launches overlapped or ran out of order", i, e, i/v)
				}
			}
		})
	}
}

// TestDevStreamFailure: a coop's failure is reported by Synchronize,
// naming the rank and the coop, and sticks: the launches after it fail
// at once and do not run.
func TestDevStreamFailure(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprint("inline=", inline), func(t *testing.T) {
			comms := initT(t, 1, Config{})
			ds := devT(t, comms, DevCommRequirements{})
			s := streamsT(t, ds, DevStreamOptions{Coops: 4, Inline: inline}, func(int) int { return 2 }, true)[0]
			boom := errors.New("boom")
			var after atomic.Int32
			s.Launch(func(k int) error {
				if k == 3 {
					return boom
				}
				return nil
			})
			s.Launch(func(int) error { after.Add(1); return nil })
			err := s.Synchronize()
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), "rank 0") || !strings.Contains(err.Error(), "coop 3") {
				t.Fatalf("Synchronize: %v, want boom naming rank 0 and coop 3", err)
			}
			if n := after.Load(); n != 0 {
				t.Fatalf("%d coops of the launch after the failure ran", n)
			}
			if err := s.Launch(func(int) error { return nil }); !errors.Is(err, boom) {
				t.Fatalf("a launch after the failure: %v, want the first failure", err)
			}
		})
	}
}

// TestNewStreamBadInput: coops below 1 are refused, naming the value.
func TestNewStreamBadInput(t *testing.T) {
	comms := initT(t, 1, Config{})
	d := devT(t, comms, DevCommRequirements{})[0]
	if _, err := d.NewStream(DevStreamOptions{Coops: 0}); err == nil || !strings.Contains(err.Error(), "0 coops") {
		t.Fatalf("NewStream with 0 coops: %v", err)
	}
}

// DevStreamOptions.Workers sets the workers (at most one a coop), 0 lets
// the stream pick what StreamWorkers says, and a negative count is
// refused with an error saying what is valid.
func TestDevStreamWorkersOption(t *testing.T) {
	comms := initT(t, 2, Config{})
	ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: 5})
	for _, tc := range []struct{ coops, workers, want int }{{5, 3, 3}, {5, 99, 5}, {1, 1, 1}, {4, 0, -1}} {
		o := DevStreamOptions{Coops: tc.coops, Workers: tc.workers, Inline: true}
		s, err := ds[0].NewStream(o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		want := tc.want
		if want < 0 {
			want = ds[0].StreamWorkers(o)
		}
		if s.Workers() != want {
			t.Errorf("%+v: %d workers, want %d", o, s.Workers(), want)
		}
		s.Close()
	}
	_, err := ds[0].NewStream(DevStreamOptions{Coops: 2, Workers: -1})
	if err == nil || !strings.Contains(err.Error(), "-1 workers") || !strings.Contains(err.Error(), "0 (the stream picks)") {
		t.Errorf("Workers -1: %v, want an error naming it and what is valid", err)
	}
}

// A stream holds at most DevStreamDepth unfinished launches: the launch
// beyond them waits until half have finished (a CUDA launch on a full
// queue blocks), and every launch runs once, in order.
func TestDevStreamDepth(t *testing.T) {
	comms := initT(t, 1, Config{})
	ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: 1})
	s, err := ds[0].NewStream(DevStreamOptions{Coops: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gate := make(chan struct{})
	var ran atomic.Int64
	var order []int64 // written by the stream's runner only
	kernel := func(i int64) func(int) error {
		return func(int) error {
			<-gate
			order = append(order, i)
			ran.Add(1)
			return nil
		}
	}
	for i := range int64(DevStreamDepth) {
		if err := s.Launch(kernel(i)); err != nil {
			t.Fatal(err)
		}
	}
	returned := make(chan uint64)
	go func() {
		if err := s.Launch(kernel(DevStreamDepth)); err != nil {
			t.Error(err)
		}
		returned <- s.Finished()
	}()
	// Not one launch has finished: the launch beyond waits, for half.
	for s.wanted.Load() != DevStreamDepth/2 {
		runtime.Gosched()
	}
	for range DevStreamDepth + 1 {
		gate <- struct{}{}
	}
	if f := <-returned; f < DevStreamDepth/2 {
		t.Errorf("the launch beyond a full queue returned with %d finished, want at least %d", f, DevStreamDepth/2)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != DevStreamDepth+1 {
		t.Fatalf("%d launches ran, want %d", ran.Load(), DevStreamDepth+1)
	}
	for i, v := range order {
		if v != int64(i) {
			t.Fatalf("launch %d ran as the %dth", v, i)
		}
	}
}

// A stream's completion marks time its launches as Comm's time its
// operations: a mark after launches reads when the last of them finished
// (after it was launched, before Synchronize returned), marks never go
// backwards, a mark needs RecordCompletions, and a mark whose launch's
// time was overwritten is an error naming the capacity.
func TestDevStreamMarks(t *testing.T) {
	comms := initT(t, 1, Config{})
	ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: 1})
	for _, inline := range []bool{false, true} {
		s, err := ds[0].NewStream(DevStreamOptions{Coops: 2, Inline: inline})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Mark(); err == nil || !strings.Contains(err.Error(), "RecordCompletions") {
			t.Errorf("inline %v: a mark with marks off: %v", inline, err)
		}
		const launches = 20
		must(t, s.RecordCompletions(launches+1))
		var marks []Mark
		var ran [launches]atomic.Uint64 // the launch index each launch's phase saw
		var launchedAt []time.Time
		for i := range launches {
			m, err := s.Mark()
			must(t, err)
			marks = append(marks, m)
			launchedAt = append(launchedAt, time.Now())
			must(t, s.Launch(func(coop int) error {
				if coop == 0 {
					ran[i].Store(s.Running() + 1)
				}
				return nil
			}))
		}
		m, err := s.Mark()
		must(t, err)
		marks = append(marks, m)
		must(t, s.Synchronize())
		synced := time.Now()
		var prev time.Time
		for i, m := range marks {
			at, err := s.MarkTime(m)
			must(t, err)
			if at.Before(prev) || at.After(synced) {
				t.Fatalf("inline %v: mark %d at %v: before the one before (%v) or after Synchronize returned (%v)", inline, i, at, prev, synced)
			}
			if i > 0 && at.Before(launchedAt[i-1]) {
				t.Fatalf("inline %v: mark %d, after launch %d, passed before that launch was made", inline, i, i-1)
			}
			prev = at
		}
		for i := range launches {
			if got := ran[i].Load(); got != uint64(i)+1 {
				t.Errorf("inline %v: launch %d ran as Running() %d", inline, i, int64(got)-1)
			}
		}
		// The log holds 32 launches (21 rounded up): a mark whose launch
		// had not finished when it was taken, 64 launches back, has lost
		// its time. On the stream goroutine the launch is held until the
		// mark is taken (inline, a launch has finished by then: the mark
		// reads the clock itself).
		if !inline {
			must(t, s.RecordCompletions(2))
			gate := make(chan struct{})
			must(t, s.Launch(func(int) error { <-gate; return nil }))
			m, err = s.Mark()
			must(t, err)
			close(gate)
			for range 64 {
				must(t, s.Launch(func(int) error { return nil }))
			}
			must(t, s.Synchronize())
			if _, err := s.MarkTime(m); err == nil || !strings.Contains(err.Error(), "overwritten") {
				t.Errorf("a mark 64 launches back with a log of 32: %v, want an error saying it was overwritten", err)
			}
		}
		s.Close()
	}
}

// LaunchCoops runs coops 0 to n-1 only, on the stream goroutine and
// inline, in waves too; a count outside 1..Coops is refused.
func TestDevStreamLaunchCoops(t *testing.T) {
	comms := initT(t, 1, Config{})
	ds := devT(t, comms, DevCommRequirements{LsaBarrierCount: 1})
	for _, inline := range []bool{false, true} {
		for _, workers := range []int{1, 3, 7} {
			s, err := ds[0].NewStream(DevStreamOptions{Coops: 7, Inline: inline, Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= 7; n++ {
				var ran [7]atomic.Int32
				must(t, s.LaunchCoops(n, func(k int) error { ran[k].Add(1); return nil }))
				must(t, s.Synchronize())
				for k := range ran {
					if want := int32(map[bool]int{true: 1}[k < n]); ran[k].Load() != want {
						t.Errorf("inline %v, %d workers, %d coops: coop %d ran %d times, want %d", inline, workers, n, k, ran[k].Load(), want)
					}
				}
			}
			for _, n := range []int{0, 8} {
				if err := s.LaunchCoops(n, func(int) error { return nil }); err == nil || !strings.Contains(err.Error(), "want 1 to 7") {
					t.Errorf("%d coops: %v, want an error saying 1 to 7", n, err)
				}
			}
			s.Close()
		}
	}
}
