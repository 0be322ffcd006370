package ccl

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/proto"
)

// The model's cores are GOMAXPROCS or the fewer physical cores under them,
// never more and never none.
func TestModelCores(t *testing.T) {
	for _, procs := range []int{1, 2, runtime.NumCPU(), 4 * runtime.NumCPU()} {
		got := modelCores(procs)
		if got < 1 || got > procs {
			t.Errorf("modelCores(%d) = %d, want 1..%d", procs, got, procs)
		}
		if phys := physicalCores(); phys > 0 && phys < procs && got != phys {
			t.Errorf("modelCores(%d) = %d, want the %d physical cores", procs, got, phys)
		}
	}
}

// planSpin: no long spin past the processors; on big hosts a long spin
// without back-off; on small ones the short spin, backing off unless the
// runners fill at most half the processors.
func TestPlanSpin(t *testing.T) {
	for _, c := range []struct {
		runners, procs int
		spin           time.Duration
		noBackOff      bool
	}{
		{3, 2, 0, false}, {17, 16, 0, false}, {64, 16, 0, false},
		{16, 16, longSpinFor, true}, {1, 8, longSpinFor, true}, {8, 8, longSpinFor, true},
		{2, 2, proto.DefaultSpinFor, false}, {1, 2, proto.DefaultSpinFor, true},
		{2, 4, proto.DefaultSpinFor, true}, {3, 4, proto.DefaultSpinFor, false}, {1, 1, proto.DefaultSpinFor, false},
	} {
		spin, nb := planSpin(c.runners, c.procs)
		if spin != c.spin || nb != c.noBackOff {
			t.Errorf("planSpin(%d runners, %d procs) = %v, %v; want %v, %v", c.runners, c.procs, spin, nb, c.spin, c.noBackOff)
		}
	}
}

func TestNetSpin(t *testing.T) {
	for _, c := range []struct {
		override string
		want     time.Duration
		bad      bool
	}{
		{"", 0, false}, {"300us", 300 * time.Microsecond, false}, {"2ms", 2 * time.Millisecond, false}, {"0", 0, false},
		{"fast", 0, true}, {"-1ms", 0, true},
	} {
		got, err := netSpin(c.override)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("netSpin(%q) = %v, %v; want %v, error %v", c.override, got, err, c.want, c.bad)
		}
		if err != nil && !strings.Contains(err.Error(), EnvNetSpin) {
			t.Errorf("error %q does not name %s", err, EnvNetSpin)
		}
	}
}

// TestIdleChannelSpinsLikeItsPlans: a channel goroutine that ran a plan
// whose runners fit the processors spins like it when idle, on channels
// but 0 (whose work the caller runs); where the plans back off (more
// runners than processors) it does not spin at all.
func TestIdleChannelSpinsLikeItsPlans(t *testing.T) {
	for _, c := range []struct {
		procs int
		spin  time.Duration
	}{{16, longSpinFor}, {1, 0}} {
		prev := runtime.GOMAXPROCS(c.procs)
		comms := initT(t, 2, Config{Algo: "Ring", Proto: "Simple", NChannels: 2})
		runtime.GOMAXPROCS(prev)
		const count = 1 << 16 // enough for both channels
		if err := perRankErr(comms, func(comm *Comm) error {
			buf := make([]byte, 4*count)
			if err := comm.AllReduce(buf, buf, count, Float32, Sum); err != nil {
				return err
			}
			return comm.Synchronize()
		}); err != nil {
			t.Fatal(err)
		}
		for _, comm := range comms {
			// After Destroy the channel goroutines have exited: their
			// fields may be read.
			if err := comm.Destroy(); err != nil {
				t.Fatal(err)
			}
			if got := comm.channels[0].idleSpin; got != 0 {
				t.Errorf("procs %d: rank %d channel 0 idle spin %v, want 0", c.procs, comm.Rank(), got)
			}
			if got := comm.channels[1].idleSpin; got != c.spin {
				t.Errorf("procs %d: rank %d channel 1 idle spin %v, want %v", c.procs, comm.Rank(), got, c.spin)
			}
		}
	}
}
