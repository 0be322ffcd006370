package perf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gccl/gccl/launch"
	"github.com/gccl/gccl/launch/netns"
	"github.com/gccl/gccl/lib/ccl"
)

// launchProcesses is --np N: this program again, N times on this host,
// with the rest of the command line; one table (process 0's), every
// process's errors prefixed with its rank, the worst exit code.
func launchProcesses(t *Test, o *Options, args []string, stdout, stderr io.Writer) int {
	prog := t.Prog
	exe, prefix, err := ChildCommand(t)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --np %d: finding this program: %v\n", prog, o.NP, err)
		return exitInternal
	}
	lo := launch.Options{
		NP: o.NP, Path: exe, Args: append(prefix, withoutLaunchFlags(args)...), Env: os.Environ(),
		Stdout: stdout, Stderr: stderr, Bind: o.BindTo == "core",
	}
	if !o.Netns {
		lo.ProcEnv = hostsEnv(o.NP, o.Hosts, os.LookupEnv)
	} else {
		hs, err := netns.Build(o.Hosts)
		if err != nil {
			fmt.Fprintf(stderr, "%s: --netns: %v\n", prog, err)
			return exitInternal
		}
		defer hs.Remove()
		// Name what was built, so a run cut short can be cleaned up by
		// hand (ip netns del) and a test can check it is gone.
		fmt.Fprintf(stderr, "%s: --netns: hosts %s on %s0/24, removed at exit\n", prog, strings.Join(hs.NS, " "), hs.Net)
		netnsPlace(&lo, hs, o.NP/o.Hosts)
	}
	code, err := launch.Run(lo)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --np %d: %v\n", prog, o.NP, err)
		switch {
		case errors.Is(err, launch.ErrInvalidEnv):
			code = exitInvalidUsage
		case code == 0:
			code = exitInternal
		}
	}
	return code
}

// ChildCommand is the program and leading arguments that run test t in a
// process of --np: this executable, as is. A program that embeds perf
// under a subcommand (tune sweep) sets it in its init.
var ChildCommand = func(t *Test) (path string, prefix []string, err error) {
	exe, err := os.Executable()
	return exe, nil, err
}

// launchFlags are perf's flags for the launcher, and whether each takes a
// value: its processes do not see them.
var launchFlags = map[string]bool{"np": true, "hosts": true, "netns": false, "bind-to": true}

// withoutLaunchFlags returns args without launchFlags (--name V,
// --name=V, or --name alone for a boolean), up to a "--": the command line
// a launcher hands its processes.
func withoutLaunchFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		drop := false
		for name, hasValue := range launchFlags {
			if a == "--"+name {
				drop = true
				if hasValue {
					i++ // and its value
				}
			}
			if strings.HasPrefix(a, "--"+name+"=") {
				drop = true
			}
		}
		if !drop {
			out = append(out, a)
		}
	}
	return out
}

// netnsPlace is --netns: host k's processes (perHost consecutive ones) run
// in hs's namespace k, named after it as their host id, on its link; rank
// 0's namespace serves the bootstrap root.
func netnsPlace(lo *launch.Options, hs *netns.Hosts, perHost int) {
	lo.RootHost = hs.Addr(0)
	lo.Wrap = func(r int) []string { return hs.Exec(r / perHost) }
	lo.ProcEnv = func(r int) []string {
		k := r / perHost
		return []string{ccl.EnvHostID + "=" + hs.NS[k], ccl.EnvSocketIfname + "=" + hs.Inner(k)}
	}
}

// hostsEnv is --hosts: process r of np is host r/(np/hosts), named
// "host<k>" as its GCCL_HOSTID (so the stack joins hosts by the network
// transport), on loopback unless GCCL_SOCKET_IFNAME is set. NCCL is told
// the same (NCCL_HOSTID; NCCL_SOCKET_IFNAME=lo unless set): it then sees
// that many nodes and joins them with its network transport (sockets over
// loopback where no other network is configured). nil when hosts is 0
// (the processes are one host).
func hostsEnv(np, hosts int, lookup func(string) (string, bool)) func(int) []string {
	if hosts <= 0 {
		return nil
	}
	_, ifname := lookup(ccl.EnvSocketIfname)
	_, ncclIfname := lookup("NCCL_SOCKET_IFNAME")
	return func(r int) []string {
		host := "host" + strconv.Itoa(r/(np/hosts))
		env := []string{ccl.EnvHostID + "=" + host, "NCCL_HOSTID=" + host}
		if !ifname {
			env = append(env, ccl.EnvSocketIfname+"=lo")
		}
		if !ncclIfname {
			env = append(env, "NCCL_SOCKET_IFNAME=lo")
		}
		return env
	}
}
