package perf

import (
	"fmt"
	"github.com/gccl/gccl/lib/ccl"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gccl/gccl/launch"
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
	code, err := launch.Run(launch.Options{
		NP: o.NP, Path: exe, Args: append(prefix, WithoutFlag(WithoutFlag(args, "np"), "hosts")...), Env: os.Environ(),
		ProcEnv: hostsEnv(o.NP, o.Hosts, os.LookupEnv),
		Stdout:  stdout, Stderr: stderr,
	})
	if err != nil {
		fmt.Fprintf(stderr, "%s: --np %d: %v\n", prog, o.NP, err)
		if code == 0 {
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

// WithoutFlag returns args without the long flag --name and its value
// (--name V or --name=V): the command line a launcher hands its processes.
func WithoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "--"+name {
			i++ // and its value
			continue
		}
		if strings.HasPrefix(a, "--"+name+"=") {
			continue
		}
		out = append(out, a)
	}
	return out
}

// hostsEnv is --hosts: process r of np is host r/(np/hosts), named
// "host<k>" as its GCCL_HOSTID (so the stack joins hosts by the network
// transport), on loopback unless GCCL_SOCKET_IFNAME is set. nil when
// hosts is 0 (the processes are one host).
func hostsEnv(np, hosts int, lookup func(string) (string, bool)) func(int) []string {
	if hosts <= 0 {
		return nil
	}
	_, ifname := lookup(ccl.EnvSocketIfname)
	return func(r int) []string {
		env := []string{ccl.EnvHostID + "=host" + strconv.Itoa(r/(np/hosts))}
		if !ifname {
			env = append(env, ccl.EnvSocketIfname+"=lo")
		}
		return env
	}
}
