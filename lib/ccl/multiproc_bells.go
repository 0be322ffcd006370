// The bell segment of a job across processes: its layout (per rank its
// operation counters, per channel the bells, the kick word and the count
// of unrun work, then its part of the one-shot board), mapping it, and the
// wakes and kicks of another process's channels, folded ones included.

package ccl

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gccl/gccl/lib/board"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/shm"
)

// Layout of a process's bell segment: per rank it holds, a header (its
// operation counters) and per channel a block: the runner's bell, the
// idle goroutine's bell, the kick word, the count of queued work not yet
// taken, the bell of the channel as a driver of folded channels, the bell
// of its wait for the previous plan, and the progress record.
const (
	rankHeaderBytes = 64
	chanBlockBytes  = 640
	runBellOff      = 0
	idleBellOff     = 64
	kickOff         = 128
	unrunOff        = 136
	foldBellOff     = 192
	prevBellOff     = 256
	progressOff     = 320
	progressText    = chanBlockBytes - progressOff - 16
)

// After the channel blocks, a rank's block holds its part of the one-shot
// board (board.RankBytes).
func (j *job) rankBlockBytes() int { return j.boardOff() + board.RankBytes }

func (j *job) boardOff() int { return rankHeaderBytes + j.maxCh*chanBlockBytes }

// board is the one-shot board over every rank's part in the segments.
func (j *job) board(nranks int) *board.Board {
	parts := make([][]uint64, nranks)
	for r := range parts {
		m := j.rankMem(r)[j.boardOff():]
		parts[r] = unsafe.Slice((*uint64)(unsafe.Pointer(&m[0])), board.RankWords)
	}
	return board.NewBoard(parts)
}

// rankMem is rank r's block in its process's segment.
func (j *job) rankMem(r int) []byte {
	n := j.rankBlockBytes()
	return j.bells[j.procOf[r]].Data()[j.slotOf[r]*n : (j.slotOf[r]+1)*n]
}

func (j *job) chanMem(r, ch int) []byte {
	m := j.rankMem(r)[rankHeaderBytes+ch*chanBlockBytes:]
	return m[:chanBlockBytes]
}

// rankProgress is rank r's operation counters.
func (j *job) rankProgress(r int) *opCounters {
	return (*opCounters)(unsafe.Pointer(&j.rankMem(r)[0]))
}

// opCounters mirror a communicator's stream in shared memory, for the hang
// dump of any process: enqueued is written by the rank's calling
// goroutine, finished by its channel goroutines; read by dumps. fold is
// the communicator's fold mark (Comm.fold), read by the kicks of other
// processes too (remoteKick).
type opCounters struct {
	enqueued, finished atomic.Uint64
	fold               foldMark
}

func (j *job) bell(r, ch, off int) *proto.Bell { return proto.BellAt(j.chanMem(r, ch)[off:]) }

func (j *job) kickWord(r, ch int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&j.chanMem(r, ch)[kickOff]))
}

// unrunWord counts channel ch of rank r's queued work not yet taken by a
// runner: added to by the owner's post after queueing, taken from by its
// runner as it takes work; read by kickers in any process, which ring the
// idle goroutine only when there is work for it.
func (j *job) unrunWord(r, ch int) *atomic.Int64 {
	return (*atomic.Int64)(unsafe.Pointer(&j.chanMem(r, ch)[unrunOff]))
}

// remoteWaiter wakes channel ch of rank r, which another process runs.
func (j *job) remoteWaiter(r, ch int) *proto.Waiter {
	return proto.RemoteWaiter(j.bell(r, ch, runBellOff))
}

// remoteKick asks channel ch of rank r in another process to run its
// queued work (the kick of a waiter whose peer has not started). While
// rank r's last folded plan runs, channel ch's part is its driver's, and
// the kick goes to the driver's channel too.
func (j *job) remoteKick(r, ch int) func() {
	kick := j.kickChannel(r, ch)
	if ch == 0 {
		return kick // its own driver whenever it folds
	}
	oc := j.rankProgress(r)
	drivers := make([]func(), ch) // the kicks of the channels that may drive ch
	for d := range drivers {
		drivers[d] = j.kickChannel(r, d)
	}
	return func() {
		kick()
		if d, ok := oc.fold.driverOf(ch, oc.finished.Load()); ok {
			drivers[d]()
		}
	}
}

// kickChannel is remoteKick of channel ch alone.
func (j *job) kickChannel(r, ch int) func() {
	kick, unrun, idle := j.kickWord(r, ch), j.unrunWord(r, ch), proto.RemoteWaiter(j.bell(r, ch, idleBellOff))
	return func() {
		// The Dekker pair with post: it counts its work in unrun, then
		// takes the kick; this sets the kick, then looks at unrun. Work
		// that is not counted yet will see the kick. A wake when nothing is
		// queued would only get the idle goroutine to yield against its
		// own process's caller (measured: 4 processes on 2 cores, 8 B
		// allreduce, about twice as fast without those wakes; commit
		// e5b6bbc).
		kick.Store(1)
		if unrun.Load() > 0 {
			idle.Wake()
		}
	}
}

// mapBells creates this process's bell segment and maps every other
// process's. Whoever opens a segment first creates it (zeroed, the same
// size either way); the last of the processes to map it removes its name.
func (j *job) mapBells(timeout time.Duration) error {
	j.bells = make([]*shm.Segment, len(j.procs))
	order := make([]int, 0, len(j.procs))
	order = append(order, j.self)
	for i := range j.procs {
		if i != j.self {
			order = append(order, i)
		}
	}
	mapped := uint32(0)
	for _, pi := range order {
		if !j.local(pi) {
			continue // another host's: its bells are out of reach, and not needed
		}
		mapped++
		name := fmt.Sprintf("%s-bells-%d", j.prefix, pi)
		size := max(len(j.procs[pi].Ranks)*j.rankBlockBytes(), 4096)
		seg, err := shm.Open(j.dir, name, size, nil, joinWait(timeout), nil)
		if err != nil {
			return fmt.Errorf("ccl: InitRanks: %w", err)
		}
		j.bells[pi] = seg
	}
	for _, seg := range j.bells {
		if seg != nil {
			seg.MarkMapped(mapped)
		}
	}
	return nil
}

// local reports whether process pi runs on this process's host.
func (j *job) local(pi int) bool { return j.procs[pi].HostID == j.procs[j.self].HostID }

// ringIdle wakes rank r's idle goroutines (its Destroy).
func (j *job) ringIdle(r int) {
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return
	}
	for ch := 0; ch < j.maxCh; ch++ {
		j.bell(r, ch, idleBellOff).Interrupt()
	}
}
