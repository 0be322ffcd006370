// env.go: a job's environment: the bootstrap variables it replaces, its
// own root and token, GOMAXPROCS and the processors of each process.

package launch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/gccl/gccl/lib/bootstrap"
)

// ErrInvalidEnv is a variable of the launcher's environment that no
// launch could use (a usage error: perf exits 6).
var ErrInvalidEnv = errors.New("invalid environment")

// replacedVars looks at the bootstrap variables the environment sets
// for another job, which the launcher replaces with its own job's root
// and token (jobEnv): never in silence. A GCCL_COMM_ID that is not a
// host:port is an error (as it is under any launcher); a valid one, and
// MASTER_ADDR/MASTER_PORT, get a note that they are ignored, as does
// GCCL_JOB_TOKEN (whose value, a secret, is not shown).
func replacedVars(env []string) (notes []string, err error) {
	get := func(k string) (string, bool) {
		v := ""
		for _, kv := range env {
			if name, val, _ := strings.Cut(kv, "="); name == k {
				v = val // the last one counts, as for exec
			}
		}
		return v, strings.TrimSpace(v) != ""
	}
	if v, ok := get(bootstrap.EnvCommID); ok {
		lookup := func(k string) (string, bool) {
			if k == bootstrap.EnvCommID {
				return v, true
			}
			return "", false
		}
		if _, err := bootstrap.Detect(lookup); err != nil {
			return nil, fmt.Errorf("launch: %w: %s; --np starts its own bootstrap root: unset %s",
				ErrInvalidEnv, strings.TrimPrefix(err.Error(), "bootstrap: "), bootstrap.EnvCommID)
		}
		notes = append(notes, fmt.Sprintf("--np starts its own bootstrap root; %s=%s is ignored", bootstrap.EnvCommID, v))
	}
	var torch []string
	for _, k := range []string{bootstrap.EnvMasterAddr, bootstrap.EnvMasterPort} {
		if v, ok := get(k); ok {
			torch = append(torch, k+"="+v)
		}
	}
	if len(torch) > 0 {
		notes = append(notes, fmt.Sprintf("--np starts its own bootstrap root; %s ignored", strings.Join(torch, " ")))
	}
	if _, ok := get(bootstrap.EnvJobToken); ok {
		notes = append(notes, fmt.Sprintf("--np makes a fresh job token; %s is ignored", bootstrap.EnvJobToken))
	}
	return notes, nil
}

// jobEnv is the base environment without any launcher's variables, plus
// this job's root address (on rootHost, "" for 127.0.0.1) and token.
func jobEnv(base []string, np int, rootHost string) ([]string, error) {
	var port int
	if rootHost == "" {
		rootHost = "127.0.0.1"
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("launch: finding a free port for the bootstrap root: %w", err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	} else {
		port = 20000 + mrand.IntN(40000)
	}
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("launch: job token: %w", err)
	}
	drop := map[string]bool{}
	for _, k := range bootstrap.LauncherVariables() {
		drop[k] = true
	}
	for _, k := range []string{bootstrap.EnvCommID, bootstrap.EnvMasterAddr, bootstrap.EnvMasterPort, bootstrap.EnvJobToken} {
		drop[k] = true
	}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	if g := sharedGOMAXPROCS(env, np, runtime.NumCPU()); g != "" {
		env = append(env, g)
	}
	return append(env,
		bootstrap.EnvLaunchSize+"="+strconv.Itoa(np),
		bootstrap.EnvCommID+"="+net.JoinHostPort(rootHost, strconv.Itoa(port)),
		bootstrap.EnvJobToken+"="+hex.EncodeToString(tok[:]),
		bootstrap.EnvLaunchJobID+"="+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(tok[:4]),
	), nil
}

// sharedGOMAXPROCS is the GOMAXPROCS setting ("GOMAXPROCS=4") for each
// of np processes on cpus processors when the environment sets none:
//   - more processes than processors: 1. A second Go processor only lets
//     the runtime spin looking for work against the peers the ranks wait
//     for (the 2-core VM, 4 processes' 8 B allreduce: twice as fast with
//     it; docs/log/performance-2026-11.md 12f);
//   - else the processes' share of the processors, but at least 2: a
//     runtime with all of the host's processors in each of many processes
//     spins its idle ones on its neighbours' cores (16-core Xeon, 8
//     processes unbound, 256 KiB allreduce several times faster with 2
//     than with 16), while a second one beside a rank bound to one core
//     lets its channel goroutine and the runtime's work run without taking
//     the rank's turn (the Xeon, 16 bound processes, 2 MiB, and the VM, 2
//     bound processes' 8 B: faster with 2 than with 1;
//     docs/log/performance-2026-11.md 12n).
//
// "" when nothing is to be set (one process, or GOMAXPROCS set).
func sharedGOMAXPROCS(env []string, np, cpus int) string {
	if np <= 1 {
		return ""
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return ""
		}
	}
	if np > cpus {
		return "GOMAXPROCS=1"
	}
	return "GOMAXPROCS=" + strconv.Itoa(max(2, cpus/np))
}

// CPUBlocks splits cpus (the processors the launcher may use, in order)
// into np consecutive blocks as even as can be, block r for process r;
// nil when there are fewer processors than processes (or none known), so
// that nothing is bound.
func CPUBlocks(cpus []int, np int) [][]int {
	if np < 1 || len(cpus) < np {
		return nil
	}
	blocks := make([][]int, np)
	for r := range np {
		blocks[r] = cpus[r*len(cpus)/np : (r+1)*len(cpus)/np]
	}
	return blocks
}
