package ccl

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/launch/netns"
	"github.com/gccl/gccl/lib/bootstrap"
)

// netHosts are "hosts" built of network namespaces on this machine (see
// launch/netns), removed when the test ends.
type netHosts struct {
	t *testing.T
	*netns.Hosts
	ns []string // host k's namespace
}

// newNetHosts builds n hosts, or skips the test where namespaces cannot be
// made (not root, no ip command, or a kernel that refuses).
func newNetHosts(t *testing.T, n int) *netHosts {
	t.Helper()
	hs, err := netns.Build(n)
	if errors.Is(err, netns.ErrUnsupported) {
		t.Skipf("skipping: %v (CI runs as root with iproute2)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hs.Remove)
	return &netHosts{t: t, Hosts: hs, ns: hs.NS}
}

// link sets host k's link up or down.
func (h *netHosts) link(k int, up bool) {
	h.t.Helper()
	if err := h.SetLink(k, up); err != nil {
		h.t.Fatal(err)
	}
}

// waitReachable waits until host k reaches the bridge's address over TCP.
func (h *netHosts) waitReachable(k int, d time.Duration) {
	h.t.Helper()
	if err := h.WaitReachable(k, d); err != nil {
		h.t.Fatal(err)
	}
}

// placer runs process p in host hostOf[p]'s namespace, as that host (its
// namespace's name is its host id) on that namespace's interface, and
// serves the job's roots on the bridge's address.
func (h *netHosts) placer(hostOf []int) func(p int, cmd *exec.Cmd) {
	h.t.Setenv(bootstrap.EnvCommID, h.BridgeIP+":0")
	return func(p int, cmd *exec.Cmd) {
		k := hostOf[p]
		cmd.Args = append(h.Exec(k), cmd.Args...)
		cmd.Path = mustLookPath(h.t, "ip")
		cmd.Env = append(cmd.Env, EnvHostID+"="+h.ns[k], EnvSocketIfname+"="+h.Inner(k))
	}
}

func mustLookPath(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNetnsMatrix runs the correctness matrix, sampled, across hosts made
// of network namespaces (real TCP between separate network stacks): 2 and
// 3 hosts of 1 or 2 processes of 1 or 2 ranks, ring and tree, every
// protocol, 1 to 4 channels, every collective and send/recv.
func TestNetnsMatrix(t *testing.T) {
	layouts := []struct {
		hostOf []int // each process's host
		per    int
		env    []string
	}{
		{[]int{0, 1}, 1, nil},
		{[]int{0, 1}, 2, []string{EnvNSocks + "=3", EnvNSocksThreads + "=2"}}, // three sockets a connection
		{[]int{0, 1, 2}, 1, nil},
		{[]int{0, 0, 1, 1}, 1, nil},
		{[]int{0, 1, 1, 2}, 2, nil},
	}
	if testing.Short() {
		layouts = layouts[:3]
	}
	h := newNetHosts(t, 3)
	for li, l := range layouts {
		cells := hostCells(li, 4)
		hosts := map[int]bool{}
		for _, k := range l.hostOf {
			hosts[k] = true
		}
		t.Run(fmt.Sprintf("hosts=%d/procs=%d/ranks=%d", len(hosts), len(l.hostOf), l.per), func(t *testing.T) {
			place := h.placer(l.hostOf)
			run := startJob(t, jobSpec{procs: len(l.hostOf), perProc: l.per, cells: cells, place: func(p int, cmd *exec.Cmd) {
				place(p, cmd)
				cmd.Env = append(cmd.Env, l.env...)
			}})
			outs, errs := run.wait(4 * time.Minute)
			for p, err := range errs {
				if err != nil {
					t.Errorf("process %d (host %s): %v\n%s", p, h.ns[l.hostOf[p]], err, outs[p])
				}
			}
		})
	}
}

// TestNetnsFaults cuts a host's link, or kills its process, in the middle
// of a stream of allreduces across 3 hosts: every other process must exit
// non-zero within the timeout + 5 s with an error naming the lost peer's
// rank and host; no trial may hang.
func TestNetnsFaults(t *testing.T) {
	trials := 20
	if testing.Short() {
		trials = 4
	}
	const timeout = 3 * time.Second
	h := newNetHosts(t, 3)
	hostOf := []int{0, 1, 2}
	hangs := 0
	for trial := range trials {
		victim := 1 + trial%2
		cut := trial%4 < 2 // link down, else the host's process killed
		what := "link down"
		if !cut {
			what = "process killed"
		}
		t.Run(fmt.Sprintf("%d/%s/host%d", trial, strings.ReplaceAll(what, " ", "-"), victim), func(t *testing.T) {
			run := startJob(t, jobSpec{procs: 3, perProc: 1, scenario: "netfault", rankTimeout: timeout, place: h.placer(hostOf)})
			if err := run.waitOutput("READY", time.Minute); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if cut {
				h.link(victim, false)
				defer func() {
					h.link(victim, true)
					h.waitReachable(victim, 30*time.Second)
				}()
			} else {
				_ = run.cmds[victim].Process.Signal(syscall.SIGKILL)
			}
			for p := range hostOf {
				if p == victim && !cut {
					<-run.done[p]
					continue
				}
				err := run.waitOne(p, timeout+5*time.Second)
				took := time.Since(start)
				out := run.outs[p].String()
				res := resultLine(out)
				switch {
				case err == nil:
					t.Errorf("process %d exited 0 after the %s of host %d:\n%s", p, what, victim, out)
				case strings.Contains(err.Error(), "still running"):
					hangs++
					t.Errorf("process %d hung after the %s of host %d (killed after %v):\n%s", p, what, victim, took, out)
				case p != victim && (!strings.Contains(res, fmt.Sprintf("rank %d", victim)) || !strings.Contains(res, h.ns[victim])):
					t.Errorf("process %d's error after the %s of host %d names neither rank %d nor host %s: %q", p, what, victim, victim, h.ns[victim], res)
				}
			}
		})
	}
	if hangs > 0 {
		t.Errorf("%d processes hung over %d trials", hangs, trials)
	}
}
