package bootstrap

import (
	"errors"
	"strings"
	"testing"
)

func TestUniqueIDRoundTrip(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:29500", "[::1]:1", "node-17.cluster.example:65535", strings.Repeat("h", maxAddrLen-2) + ":1"} {
		a, err := NewUniqueID(addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		b, _ := NewUniqueID(addr)
		if got, err := a.Root(); err != nil || got != addr {
			t.Errorf("Root() = %q, %v; want %q", got, err, addr)
		}
		if a.Token() == b.Token() {
			t.Errorf("%s: two ids share a token", addr)
		}
		if len(a) != 128 {
			t.Errorf("%d bytes, want NCCL's 128", len(a))
		}
	}
	for _, bad := range []string{"", "h", "h:0", strings.Repeat("h", maxAddrLen) + ":1"} {
		if _, err := NewUniqueID(bad); err == nil {
			t.Errorf("NewUniqueID(%q): no error", bad)
		}
	}
	var zero UniqueID
	if _, err := zero.Root(); !errors.Is(err, ErrBadUniqueID) {
		t.Errorf("a zero id: %v", err)
	}
}

// Every process of a launched job derives the same id; another job, or
// another GCCL_JOB_TOKEN, a different token.
func TestIDFor(t *testing.T) {
	l := Launch{Launcher: "slurm", Size: 4, JobID: "SLURM_JOB_ID=9", Root: "127.0.0.1:30000"}
	a, err := IDFor(l, "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := IDFor(l, "")
	if a != b {
		t.Error("two processes of one job derived different ids")
	}
	other := l
	other.JobID = "SLURM_JOB_ID=10"
	c, _ := IDFor(other, "")
	d, _ := IDFor(l, "secret")
	if c.Token() == a.Token() || d.Token() == a.Token() {
		t.Error("another job or another GCCL_JOB_TOKEN gave the same token")
	}
	if _, err := IDFor(Launch{Size: 2, Root: "h:1"}, ""); err == nil || !strings.Contains(err.Error(), "GCCL_JOB_TOKEN") {
		t.Errorf("no job id and no token: %v", err)
	}
	if _, err := IDFor(Launch{Size: 1}, "x"); err == nil {
		t.Error("no root: no error")
	}
}
