package hostload

import (
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const stat = `cpu  1000 10 300 5000 40 5 6 7 0 0
cpu0 600 10 200 2000 20 5 6 7 0 0
cpu1 400 0 100 3000 20 0 0 0 100 0
intr 12345 1 2 3
ctxt 999
`

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		cpus []int
		want CPUTimes
	}{
		// cpu0: busy 600+10+200+5+6+7 = 828, total 828+2000+20 = 2848.
		{[]int{0}, CPUTimes{Busy: 828, Total: 2848, CPUs: 1}},
		// cpu1: busy 500 (guest 100 is inside user already), total 3520.
		{[]int{1}, CPUTimes{Busy: 500, Total: 3520, CPUs: 1}},
		{nil, CPUTimes{Busy: 1328, Total: 6368, CPUs: 2}},
		{[]int{0, 1, 7}, CPUTimes{Busy: 1328, Total: 6368, CPUs: 2}},
	} {
		got, err := ParseStat([]byte(stat), tc.cpus)
		if err != nil || got != tc.want {
			t.Errorf("ParseStat(cpus %v) = %+v, %v; want %+v", tc.cpus, got, err, tc.want)
		}
	}
	for _, bad := range []struct{ data, want string }{
		{stat, "no line for processors [5]"},
		{"cpu0 1 2 x 4 5\n", "field 3"},
		{"cpux 1 2 3 4 5\n", `line "cpux"`},
		{"", "no line"},
	} {
		cpus := []int(nil)
		if strings.Contains(bad.want, "[5]") {
			cpus = []int{5}
		}
		if _, err := ParseStat([]byte(bad.data), cpus); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseStat(%q): %v, want an error saying %q", bad.data, err, bad.want)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	// The command holds a space and a closing parenthesis: fields count
	// from the last one. utime 250, stime 50.
	line := "4242 (my prog) x) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 9 0 1234 5678 90 18446744073709551615\n"
	got, err := ParseProcStat([]byte(line))
	if err != nil || got != 300 {
		t.Errorf("ParseProcStat = %d, %v; want 300", got, err)
	}
	for _, bad := range []string{"4242 no command R 1", "4242 (x) R 1 2 3", "4242 (x) R 1 2 3 4 5 6 7 8 9 10 x 50 0"} {
		if _, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("ParseProcStat(%q): no error", bad)
		}
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc here")
	}
	if _, err := ParseProcStat(self); err != nil {
		t.Errorf("this process's /proc/self/stat: %v", err)
	}
}

func TestOthersAndTaken(t *testing.T) {
	at := func(busy, total, own uint64) Sample {
		return Sample{CPU: CPUTimes{Busy: busy, Total: total, CPUs: 2}, Own: own}
	}
	for _, tc := range []struct {
		a, b  Sample
		want  float64
		taken int
	}{
		// 10 ticks passed on each of 2 processors (20 in all): 15 busy,
		// 5 of them ours: others kept one processor busy.
		{at(0, 0, 0), at(15, 20, 5), 1, 1},
		// All of it ours: nobody else.
		{at(100, 200, 50), at(115, 220, 65), 0, 0},
		// Others at 40% of a processor: none taken; at 60%: one.
		{at(0, 0, 0), at(4, 20, 0), 0.4, 0},
		{at(0, 0, 0), at(6, 20, 0), 0.6, 1},
		// Both processors busy with others.
		{at(0, 0, 0), at(20, 20, 0), 2, 2},
		// More of ours than the processors' busy time (the two files are
		// read a moment apart): never below 0.
		{at(0, 0, 0), at(5, 20, 8), 0, 0},
		// No time passed, or a counter went back: 0.
		{at(10, 20, 0), at(10, 20, 0), 0, 0},
		{at(10, 20, 5), at(12, 40, 4), 0, 0},
	} {
		got := Others(tc.a, tc.b)
		if got < tc.want-1e-9 || got > tc.want+1e-9 || Taken(got) != tc.taken {
			t.Errorf("Others(%+v, %+v) = %v (taken %d), want %v (taken %d)", tc.a, tc.b, got, Taken(got), tc.want, tc.taken)
		}
	}
}

// TestHelperBusyLoop is the busy program of TestSamplerSeesBusyProcess:
// it runs only as that test's child.
func TestHelperBusyLoop(t *testing.T) {
	if os.Getenv("GCCL_HOSTLOAD_BUSY") != "1" {
		t.Skip("the child of TestSamplerSeesBusyProcess")
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
	}
}

// TestSamplerSeesBusyProcess: another process spinning on a processor
// this one may run on is seen as one taken within a few windows; once
// the sampler's keep-alive says no, it stops and takes nothing away.
func TestSamplerSeesBusyProcess(t *testing.T) {
	if _, err := os.ReadFile("/proc/stat"); err != nil {
		t.Skip("no /proc/stat here")
	}
	child := exec.Command(os.Args[0], "-test.run=^TestHelperBusyLoop$")
	child.Env = append(os.Environ(), "GCCL_HOSTLOAD_BUSY=1")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	var alive atomicBool
	alive.set(true)
	s := Start(nil, nil, 50*time.Millisecond, alive.get)
	deadline := time.Now().Add(5 * time.Second)
	for s.Taken() < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s.Taken() < 1 {
		t.Errorf("a process spinning beside this one: %d processors taken, want at least 1", s.Taken())
	}
	alive.set(false)
	for deadline := time.Now().Add(5 * time.Second); !s.Stopped() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !s.Stopped() || s.Taken() != 0 {
		t.Errorf("after alive said no: stopped %v, taken %d; want stopped, 0", s.Stopped(), s.Taken())
	}
	var none *Sampler
	if none.Taken() != 0 {
		t.Error("a nil sampler took processors")
	}
}

// atomicBool is a keep-alive the test flips while the sampler reads it.
type atomicBool struct{ v atomic.Bool }

func (b *atomicBool) set(v bool) { b.v.Store(v) }
func (b *atomicBool) get() bool  { return b.v.Load() }
