package ccl

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/bootstrap"
	"github.com/gccl/gccl/lib/shm"
)

// TestFromLookupJobFields: the variables of a job across processes reach
// their Config fields (GCCL_HOSTID trimmed), and an unset one keeps the
// caller's field.
func TestFromLookupJobFields(t *testing.T) {
	env := map[string]string{EnvHostID: " h1 ", EnvSocketIfname: "=eth0", EnvNetSpin: "2ms", EnvShmDir: "/tmp/x"}
	c, err := Config{}.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil || c.HostID != "h1" || c.SocketIfname != "=eth0" || c.NetSpin != 2*time.Millisecond || c.ShmDir != "/tmp/x" {
		t.Errorf("FromLookup(%v) = HostID %q, SocketIfname %q, NetSpin %v, ShmDir %q, %v", env, c.HostID, c.SocketIfname, c.NetSpin, c.ShmDir, err)
	}
	given := Config{HostID: "a", SocketIfname: "lo", NetSpin: time.Millisecond, ShmDir: "/d"}
	if c, err := given.FromLookup(func(string) (string, bool) { return "", false }); err != nil || c != given {
		t.Errorf("FromLookup with nothing set = %+v, %v; want the fields kept", c, err)
	}
}

// TestIDOptionsFromLookup: GCCL_COMM_ID gives the root's host, GCCL_TIMEOUT
// its timeout (0: forever, which a root takes as DefaultTimeout), and an
// invalid value of either is an error naming it.
func TestIDOptionsFromLookup(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want IDOptions
		bad  string // the variable the error names
	}{
		{nil, IDOptions{}, ""},
		{map[string]string{bootstrap.EnvCommID: " 10.0.0.1:29500 "}, IDOptions{Host: "10.0.0.1"}, ""},
		{map[string]string{bootstrap.EnvCommID: "[::1]:1", EnvTimeout: "2.5"}, IDOptions{Host: "::1", Timeout: 2500 * time.Millisecond}, ""},
		{map[string]string{bootstrap.EnvCommID: ":29500", EnvTimeout: "0"}, IDOptions{Timeout: -1}, ""},
		{map[string]string{bootstrap.EnvCommID: "10.0.0.1"}, IDOptions{}, bootstrap.EnvCommID},
		{map[string]string{EnvTimeout: "soon"}, IDOptions{}, EnvTimeout},
	} {
		o, err := IDOptionsFromLookup(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
		switch {
		case c.bad == "" && (err != nil || o != c.want):
			t.Errorf("%v: %+v, %v; want %+v", c.env, o, err, c.want)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%v: %+v, %v; want an error naming %s", c.env, o, err, c.bad)
		}
	}
}

// TestNewUniqueIDWithIgnoresEnvironment: NewUniqueIDWith listens where its
// options say, whatever GCCL_COMM_ID says; NewUniqueID, the NCCL-style
// helper, follows the variable (here an address of no local interface,
// TEST-NET-1, so its root cannot listen).
func TestNewUniqueIDWithIgnoresEnvironment(t *testing.T) {
	t.Setenv(bootstrap.EnvCommID, "192.0.2.1:29500")
	id, err := NewUniqueIDWith(IDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer stopRoot(id)
	if addr, err := id.Root(); err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("NewUniqueIDWith(IDOptions{}) root %q, %v; want 127.0.0.1", addr, err)
	}
	if id, err := NewUniqueID(); err == nil {
		stopRoot(id)
		t.Errorf("NewUniqueID with %s=192.0.2.1:29500 listened (root %v): it must follow the variable", bootstrap.EnvCommID, id)
	}
	t.Setenv(EnvTimeout, "soon")
	if _, err := NewUniqueID(); err == nil || !strings.Contains(err.Error(), EnvTimeout) {
		t.Errorf("NewUniqueID with %s=soon: %v, want an error naming it", EnvTimeout, err)
	}
}

// TestInitRanksTakesConfigNotEnvironment: a job across processes puts its
// segments in Config.ShmDir and names its host Config.HostID, whatever
// GCCL_SHM_DIR and GCCL_HOSTID say; with neither field set, /dev/shm and
// the hostname with the boot id.
func TestInitRanksTakesConfigNotEnvironment(t *testing.T) {
	t.Setenv(shm.EnvDir, t.TempDir())
	t.Setenv(EnvHostID, "from-env")
	host, _ := os.Hostname()
	dir := t.TempDir()
	for _, c := range []struct {
		cfg            Config
		dir, id, label string
	}{
		{Config{ShmDir: dir, HostID: "from-config"}, dir, "from-config", "from-config on " + host},
		{Config{}, shm.DefaultDir, hostID(host, ""), host},
	} {
		ids := newRoots(t, 1)
		b, _ := hex.DecodeString(ids[0])
		var id UniqueID
		copy(id[:], b)
		c.cfg.Timeout = 10 * time.Second
		comms, err := InitRanks(2, id, []int{0, 1}, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		j := comms[0].w.job
		if j.dir != c.dir || j.procs[0].HostID != c.id || j.procs[0].Host != c.label {
			t.Errorf("Config %+v: segments in %q, host id %q, label %q; want %q, %q, %q", c.cfg, j.dir, j.procs[0].HostID, j.procs[0].Host, c.dir, c.id, c.label)
		}
		if !strings.HasPrefix(c.id, host+"/") && c.id != "from-config" {
			t.Errorf("default host id %q: want the hostname and the boot id", c.id)
		}
		for _, cm := range comms {
			cm.Destroy()
		}
	}
}
