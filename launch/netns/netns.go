// Package netns builds "hosts" out of Linux network namespaces on this
// machine: each namespace has its own TCP/IP stack and one veth link to a
// bridge in the caller's namespace, so processes placed in different
// namespaces talk real TCP through separate stacks, over links that can be
// cut. perf --netns and the multi-host tests run on it. Every name and
// address is its own (a /24 of 198.18.0.0/15, the range set aside for
// benchmarks); Remove deletes them all. It needs root and iproute2.
package netns

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrUnsupported is returned by Build where namespaces cannot be made here
// (not root, no ip command, a kernel or container that refuses bridges).
var ErrUnsupported = errors.New("netns: network namespaces unavailable")

// MaxHosts bounds one Build (the /24 holds host k at .k+1, the bridge at .254).
const MaxHosts = 250

// Hosts are n namespaces joined by a bridge.
type Hosts struct {
	Tag      string   // short unique prefix of every interface and namespace
	NS       []string // host k's namespace (also a good host id)
	Net      string   // "198.18.X." of the /24
	BridgeIP string   // the bridge's own address, reachable from every host
}

// Build makes n hosts. An error wrapping ErrUnsupported says this machine
// cannot; any other names the ip command that failed. A failed Build
// leaves nothing behind.
func Build(n int) (*Hosts, error) {
	if n < 1 || n > MaxHosts {
		return nil, fmt.Errorf("netns: %d hosts: want 1 to %d", n, MaxHosts)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: network namespaces need root", ErrUnsupported)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("%w: no ip command (apt-get install iproute2)", ErrUnsupported)
	}
	h, err := claim()
	if err != nil {
		return nil, err
	}
	br := h.Tag + "br"
	steps := [][]string{{"link", "set", br, "up"}}
	for k := range n {
		ns := fmt.Sprintf("%sh%d", h.Tag, k)
		h.NS = append(h.NS, ns)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"link", "add", h.Outer(k), "type", "veth", "peer", "name", h.Inner(k), "netns", ns},
			[]string{"link", "set", h.Outer(k), "master", br, "up"},
			[]string{"-n", ns, "addr", "add", h.Addr(k) + "/24", "dev", h.Inner(k)},
			[]string{"-n", ns, "link", "set", h.Inner(k), "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"})
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			h.Remove()
			return nil, err
		}
	}
	return h, nil
}

// claim picks a tag and a subnet no other Build on this machine uses and
// makes the bridge with its address, holding a lock file meanwhile: two
// jobs (or two test packages) building hosts at once would otherwise pick
// the same subnet or tag now and then, and fight over them.
func claim() (*Hosts, error) {
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "gccl-netns.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("netns: lock file: %w", err)
	}
	defer lock.Close() // and with it the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("netns: locking %s: %w", lock.Name(), err)
	}
	x, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	h := &Hosts{Net: fmt.Sprintf("198.18.%d.", x)}
	h.BridgeIP = h.Net + "254"
	for {
		h.Tag = fmt.Sprintf("gc%04x", rand.IntN(1<<16))
		if !tagInUse(h.Tag) {
			break
		}
	}
	br := h.Tag + "br"
	if out, err := exec.Command("ip", "link", "add", br, "type", "bridge").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%w: cannot make a bridge here (%v: %s)", ErrUnsupported, err, strings.TrimSpace(string(out)))
	}
	if err := ip("addr", "add", h.BridgeIP+"/24", "dev", br); err != nil {
		h.Remove()
		return nil, err
	}
	return h, nil
}

// tagInUse reports whether a link or a namespace of this machine starts
// with tag.
func tagInUse(tag string) bool {
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, tag) {
			return true
		}
	}
	nss, _ := os.ReadDir("/run/netns")
	for _, e := range nss {
		if strings.HasPrefix(e.Name(), tag) {
			return true
		}
	}
	return false
}

// freeSubnet picks X of a 198.18.X.0/24 no interface of this namespace
// uses: two jobs building hosts at once get separate subnets.
func freeSubnet() (int, error) {
	used := map[int]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return 0, fmt.Errorf("netns: listing addresses: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if v4 := ipn.IP.To4(); v4 != nil && v4[0] == 198 && v4[1] == 18 {
				used[int(v4[2])] = true
			}
		}
	}
	start := rand.IntN(250)
	for i := range 250 {
		if x := 1 + (start+i)%250; !used[x] {
			return x, nil
		}
	}
	return 0, errors.New("netns: every 198.18.X.0/24 is in use here")
}

// Outer and Inner name host k's veth ends: on the bridge, and in its namespace.
func (h *Hosts) Outer(k int) string { return fmt.Sprintf("%sv%d", h.Tag, k) }
func (h *Hosts) Inner(k int) string { return fmt.Sprintf("%sp%d", h.Tag, k) }

// Addr is host k's IPv4 address.
func (h *Hosts) Addr(k int) string { return fmt.Sprintf("%s%d", h.Net, k+1) }

// Exec is the command prefix that runs a program in host k's namespace.
func (h *Hosts) Exec(k int) []string { return []string{"ip", "netns", "exec", h.NS[k]} }

// SetLink sets host k's link up or down (down: the host drops off the net).
func (h *Hosts) SetLink(k int, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ip("link", "set", h.Outer(k), state)
}

// WaitReachable waits until host k reaches the bridge over TCP (a link just
// set up again may take a moment to pass traffic).
func (h *Hosts) WaitReachable(k int, d time.Duration) error {
	ln, err := net.Listen("tcp", h.BridgeIP+":0")
	if err != nil {
		return err
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
	probe := fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", h.BridgeIP, port)
	deadline := time.Now().Add(d)
	for {
		if exec.Command("ip", "netns", "exec", h.NS[k], "timeout", "1", "bash", "-c", probe).Run() == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: host %d does not reach %s within %v", k, h.BridgeIP, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Remove deletes every namespace, link and the bridge, whatever exists.
func (h *Hosts) Remove() {
	for k, ns := range h.NS {
		_ = exec.Command("ip", "link", "del", h.Outer(k)).Run()
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	_ = exec.Command("ip", "link", "del", h.Tag+"br").Run()
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("netns: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
