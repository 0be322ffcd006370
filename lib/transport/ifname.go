package transport

import (
	"fmt"
	"net"
	"strings"
)

// Iface is a network interface as interface selection sees it: its name
// and its addresses (IPv4 first is preferred).
type Iface struct {
	Name     string
	Addrs    []net.IP
	Loopback bool
}

// PickInterface chooses the interface the network transport binds to, by
// spec as NCCL_SOCKET_IFNAME reads: a comma-separated list of name
// prefixes ("eth,ib"), "=" before the list for exact names ("=eth0"), "^"
// before it to exclude those instead ("^docker,lo"). An empty spec takes
// the first interface that is neither loopback nor docker*, and loopback
// when there is no other. Interfaces without an address never qualify. The
// error names the spec and the interfaces there are.
func PickInterface(spec string, ifaces []Iface) (Iface, error) {
	spec = strings.TrimSpace(spec)
	given := spec
	exclude, exact := false, false
	if strings.HasPrefix(spec, "^") {
		exclude, spec = true, spec[1:]
	}
	if strings.HasPrefix(spec, "=") {
		exact, spec = true, spec[1:]
	}
	var names []string
	for _, n := range strings.Split(spec, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	matches := func(name string) bool {
		for _, n := range names {
			if name == n || (!exact && strings.HasPrefix(name, n)) {
				return true
			}
		}
		return false
	}
	var loopback *Iface
	for i := range ifaces {
		f := ifaces[i]
		if len(f.Addrs) == 0 {
			continue
		}
		switch {
		case len(names) > 0 && !exclude:
			if matches(f.Name) {
				return f, nil
			}
		case len(names) > 0 && exclude:
			if !matches(f.Name) {
				return f, nil
			}
		case f.Loopback:
			if loopback == nil {
				loopback = &ifaces[i]
			}
		case !strings.HasPrefix(f.Name, "docker"):
			return f, nil
		}
	}
	if len(names) == 0 && loopback != nil {
		return *loopback, nil
	}
	var have []string
	for _, f := range ifaces {
		if len(f.Addrs) > 0 {
			have = append(have, f.Name)
		}
	}
	return Iface{}, fmt.Errorf("net: no interface matches GCCL_SOCKET_IFNAME=%q (interfaces with an address: %s)", given, strings.Join(have, ", "))
}

// Interfaces lists this host's interfaces that are up, for PickInterface.
func Interfaces() ([]Iface, error) {
	all, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []Iface
	for _, it := range all {
		if it.Flags&net.FlagUp == 0 {
			continue
		}
		f := Iface{Name: it.Name, Loopback: it.Flags&net.FlagLoopback != 0}
		addrs, _ := it.Addrs()
		var v6 []net.IP
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ipn.IP.To4() != nil {
					f.Addrs = append(f.Addrs, ipn.IP)
				} else if !ipn.IP.IsLinkLocalUnicast() {
					v6 = append(v6, ipn.IP)
				}
			}
		}
		f.Addrs = append(f.Addrs, v6...)
		out = append(out, f)
	}
	return out, nil
}
