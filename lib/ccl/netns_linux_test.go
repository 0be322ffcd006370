package ccl

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/bootstrap"
)

// netHosts are "hosts" built of network namespaces on this machine: each
// namespace has its own network stack and one veth link to a bridge in
// the test's namespace, where the bootstrap root listens. Ranks in
// different namespaces talk real TCP through their own stacks, over links
// the test can cut. Every name and address is the test's own (198.18.0.0/15,
// the range set aside for benchmarks); Cleanup removes them all.
type netHosts struct {
	t      *testing.T
	tag    string   // a short unique prefix of every interface and namespace
	ns     []string // host k's namespace
	net    string   // "198.18.X." of the bridge's /24
	rootIP string   // the bridge's own address
}

// newNetHosts builds n hosts, or skips the test where namespaces cannot be
// made (not root, no ip command, or a kernel that refuses).
func newNetHosts(t *testing.T, n int) *netHosts {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: network namespaces need root (CI runs as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: no ip command (apt-get install iproute2)")
	}
	h := &netHosts{t: t, tag: fmt.Sprintf("gc%04x", rand.IntN(1<<16))}
	h.net = fmt.Sprintf("198.18.%d.", rand.IntN(250)+1)
	h.rootIP = h.net + "254"
	t.Cleanup(h.remove)
	br := h.tag + "br"
	if out, err := exec.Command("ip", "link", "add", br, "type", "bridge").CombinedOutput(); err != nil {
		t.Skipf("skipping: cannot make a bridge here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	h.ip("addr", "add", h.rootIP+"/24", "dev", br)
	h.ip("link", "set", br, "up")
	for k := range n {
		ns := fmt.Sprintf("%sh%d", h.tag, k)
		h.ip("netns", "add", ns)
		h.ns = append(h.ns, ns)
		h.ip("link", "add", h.outer(k), "type", "veth", "peer", "name", h.inner(k), "netns", ns)
		h.ip("link", "set", h.outer(k), "master", br, "up")
		h.ip("-n", ns, "addr", "add", fmt.Sprintf("%s%d/24", h.net, k+1), "dev", h.inner(k))
		h.ip("-n", ns, "link", "set", h.inner(k), "up")
		h.ip("-n", ns, "link", "set", "lo", "up")
	}
	return h
}

// outer and inner name host k's veth ends: on the bridge, and in its namespace.
func (h *netHosts) outer(k int) string { return fmt.Sprintf("%sv%d", h.tag, k) }
func (h *netHosts) inner(k int) string { return fmt.Sprintf("%sp%d", h.tag, k) }

// ip runs one ip command, failing the test if it fails.
func (h *netHosts) ip(args ...string) {
	h.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		h.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
}

// remove deletes every namespace, link and the bridge, whatever exists.
func (h *netHosts) remove() {
	for k, ns := range h.ns {
		_ = exec.Command("ip", "link", "del", h.outer(k)).Run()
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	_ = exec.Command("ip", "link", "del", h.tag+"br").Run()
}

// link sets host k's link up or down.
func (h *netHosts) link(k int, up bool) {
	state := "down"
	if up {
		state = "up"
	}
	h.ip("link", "set", h.outer(k), state)
}

// waitReachable waits until host k reaches the bridge's address over TCP
// (a link just set up again may take a moment to pass traffic).
func (h *netHosts) waitReachable(k int, d time.Duration) {
	h.t.Helper()
	ln, err := net.Listen("tcp", h.rootIP+":0")
	if err != nil {
		h.t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	probe := fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", h.rootIP, port)
	deadline := time.Now().Add(d)
	for {
		if exec.Command("ip", "netns", "exec", h.ns[k], "timeout", "1", "bash", "-c", probe).Run() == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("host %d does not reach %s within %v after its link came up", k, h.rootIP, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// placer runs process p in host hostOf[p]'s namespace, as that host (its
// namespace's name is its host id) on that namespace's interface, and
// serves the job's roots on the bridge's address.
func (h *netHosts) placer(hostOf []int) func(p int, cmd *exec.Cmd) {
	h.t.Setenv(bootstrap.EnvCommID, h.rootIP+":0")
	return func(p int, cmd *exec.Cmd) {
		k := hostOf[p]
		cmd.Args = append([]string{"ip", "netns", "exec", h.ns[k]}, cmd.Args...)
		cmd.Path = mustLookPath(h.t, "ip")
		cmd.Env = append(cmd.Env, EnvHostID+"="+h.ns[k], EnvSocketIfname+"="+h.inner(k))
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
