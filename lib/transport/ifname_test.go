package transport

import (
	"net"
	"strings"
	"testing"
)

func TestPickInterface(t *testing.T) {
	ip := []net.IP{net.ParseIP("10.0.0.1")}
	ifaces := []Iface{
		{Name: "lo", Addrs: []net.IP{net.ParseIP("127.0.0.1")}, Loopback: true},
		{Name: "docker0", Addrs: ip},
		{Name: "eth0", Addrs: nil}, // no address: never chosen
		{Name: "eth1", Addrs: ip},
		{Name: "ib0", Addrs: ip},
		{Name: "veth-gccl0", Addrs: ip},
	}
	for _, c := range []struct{ spec, want string }{
		{"", "eth1"},              // not loopback, not docker, has an address
		{"ib", "ib0"},             // prefix
		{"eth", "eth1"},           // eth0 has no address
		{"=eth1", "eth1"},         // exact
		{"^docker,lo,eth", "ib0"}, // exclusion
		{"veth", "veth-gccl0"},
		{"lo", "lo"},
		{" ib , eth ", "eth1"}, // list order is the interfaces' order
	} {
		got, err := PickInterface(c.spec, ifaces)
		if err != nil || got.Name != c.want {
			t.Errorf("PickInterface(%q) = %q, %v; want %q", c.spec, got.Name, err, c.want)
		}
	}
	for _, spec := range []string{"=eth", "wlan", "^lo,docker,eth,ib,veth"} {
		_, err := PickInterface(spec, ifaces)
		if err == nil || !strings.Contains(err.Error(), spec) || !strings.Contains(err.Error(), "eth1") {
			t.Errorf("PickInterface(%q): want an error naming the spec and the interfaces, got %v", spec, err)
		}
	}
	// Only loopback: the default takes it.
	if got, err := PickInterface("", ifaces[:1]); err != nil || got.Name != "lo" {
		t.Errorf("loopback alone: %q, %v", got.Name, err)
	}
	// This host's own list parses.
	if _, err := Interfaces(); err != nil {
		t.Fatal(err)
	}
}
