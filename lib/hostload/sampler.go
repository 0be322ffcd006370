package hostload

import (
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// Interval is how often a Sampler looks: /proc/stat counts in ticks of
// 10 ms, so a look every 100 ms tells a processor's load to about 10%,
// and a program that starts or stops spinning is seen within 0.2 s.
const Interval = 100 * time.Millisecond

// Sampler looks at the processors cpus every interval, from a goroutine
// of its own, while alive says so; Taken reads its last estimate.
type Sampler struct {
	// taken is the processors others keep busy (Taken of the last
	// window): written by the sampling goroutine, read by every plan.
	taken atomic.Int32
	// stopped is set by the sampling goroutine when it ends (alive said
	// no, or the files cannot be read); read by whoever would start
	// another.
	stopped atomic.Bool
}

// Start starts sampling the processors cpus (nil: all) of this process,
// every interval until alive() says false (asked after each interval).
// The time of the processes pids (the job's others on this host) counts
// as this process's own, not as another program's. Where /proc cannot be
// read (not Linux) it samples nothing: Taken stays 0.
func Start(cpus, pids []int, interval time.Duration, alive func() bool) *Sampler {
	s := &Sampler{}
	prev, err := look(cpus, pids)
	if err != nil {
		s.stopped.Store(true)
		return s
	}
	go func() {
		defer s.stopped.Store(true)
		defer s.taken.Store(0) // a stopped sampler takes nothing away
		for {
			// alive is asked after the sleep: the sampler may start
			// before what keeps it alive does.
			time.Sleep(interval)
			if !alive() {
				return
			}
			cur, err := look(cpus, pids)
			if err != nil {
				return
			}
			s.taken.Store(int32(Taken(Others(prev, cur))))
			prev = cur
		}
	}()
	return s
}

// Taken is the processors other programs kept busy in the last window.
// A nil Sampler says 0.
func (s *Sampler) Taken() int {
	if s == nil {
		return 0
	}
	return int(s.taken.Load())
}

// Stopped says the sampling goroutine has ended.
func (s *Sampler) Stopped() bool { return s.stopped.Load() }

// look reads the processors' times and those of this process and pids.
// A process of pids that has ended counts nothing (its time is gone, and
// Others sees a counter go back for that window).
func look(cpus, pids []int) (Sample, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Sample{}, err
	}
	cpu, err := ParseStat(stat, cpus)
	if err != nil {
		return Sample{}, err
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return Sample{}, err
	}
	own, err := ParseProcStat(self)
	if err != nil {
		return Sample{}, err
	}
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		if t, err := ParseProcStat(b); err == nil {
			own += t
		}
	}
	return Sample{CPU: cpu, Own: own}, nil
}
