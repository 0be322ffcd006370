package netns

import (
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Build makes hosts that reach the bridge over their own links, a link
// set down cuts its host off, and Remove leaves nothing behind.
func TestBuildLinkRemove(t *testing.T) {
	for _, n := range []int{0, MaxHosts + 1} {
		if _, err := Build(n); err == nil || !strings.Contains(err.Error(), "want 1 to") {
			t.Errorf("Build(%d): %v, want an error naming the valid range", n, err)
		}
	}
	h, err := Build(2)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("skipping: %v (CI runs as root with iproute2)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer h.Remove()
	if h.Addr(1) == h.Addr(0) || !strings.HasPrefix(h.Addr(1), h.Net) {
		t.Fatalf("addresses %s, %s not distinct in %s0/24", h.Addr(0), h.Addr(1), h.Net)
	}
	for k := range 2 {
		if err := h.WaitReachable(k, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		// The namespace has its own stack: its link, and loopback.
		out, err := exec.Command(h.Exec(k)[0], append(h.Exec(k)[1:], "ip", "-o", "link")...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), h.Inner(k)) || strings.Contains(string(out), h.Inner(1-k)) {
			t.Errorf("host %d's links: %v\n%s", k, err, out)
		}
	}
	if err := h.SetLink(1, false); err != nil {
		t.Fatal(err)
	}
	if err := h.WaitReachable(1, 300*time.Millisecond); err == nil {
		t.Error("host 1 still reaches the bridge with its link down")
	}
	if err := h.SetLink(1, true); err != nil {
		t.Fatal(err)
	}
	if err := h.WaitReachable(1, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	h.Remove()
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), h.Tag) {
		t.Errorf("namespaces left after Remove:\n%s", out)
	}
	if out, _ := exec.Command("ip", "-o", "link").Output(); strings.Contains(string(out), h.Tag) {
		t.Errorf("links left after Remove:\n%s", out)
	}
}

// Builds at once (as go test ./... runs several packages' tests) claim
// distinct subnets and tags.
func TestBuildsAtOnceDoNotCollide(t *testing.T) {
	const n = 6
	hs := make([]*Hosts, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hs[i], errs[i] = Build(1)
		}()
	}
	wg.Wait()
	for _, h := range hs {
		if h != nil {
			defer h.Remove()
		}
	}
	nets, tags := map[string]bool{}, map[string]bool{}
	for i, err := range errs {
		if errors.Is(err, ErrUnsupported) {
			t.Skipf("skipping: %v (CI runs as root with iproute2)", err)
		}
		if err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
		if nets[hs[i].Net] || tags[hs[i].Tag] {
			t.Errorf("build %d: subnet %s0/24 or tag %s claimed twice", i, hs[i].Net, hs[i].Tag)
		}
		nets[hs[i].Net], tags[hs[i].Tag] = true, true
	}
}
