// A job's unique id and its bootstrap root: NCCL's ncclGetUniqueId in Go,
// with its options explicit (IDOptions) or from the environment.

package ccl

import (
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gccl/gccl/lib/bootstrap"
)

// UniqueID names a set of communicators across processes (ncclUniqueId):
// the bootstrap root's address and the job's token, 128 bytes.
type UniqueID = bootstrap.UniqueID

// roots are the bootstrap roots this process serves, by token: a world
// whose id names one of them keeps it until the other processes left.
var roots struct {
	mu sync.Mutex
	m  map[[32]byte]*bootstrap.Root
}

// IDOptions configure the bootstrap root that NewUniqueIDWith and
// ServeRootWith start in this process.
type IDOptions struct {
	// Host is the host name or address a new id's root listens on, on a
	// free port of its own: one every process of the job can reach. ""
	// is 127.0.0.1, for a job on one host. ServeRootWith ignores it (the
	// id names the address).
	Host string
	// Timeout is how long the root waits for every rank to join; 0 or
	// less is DefaultTimeout (a root never waits forever).
	Timeout time.Duration
}

// IDOptionsFromEnv is NCCL's behaviour: the root's host from
// GCCL_COMM_ID's (the job's address others can reach; its port is the
// launch's own root, see ServeRoot, so each id gets a port of its own),
// its timeout from GCCL_TIMEOUT (Config.Timeout's syntax). An invalid
// value is an error naming the variable.
func IDOptionsFromEnv() (IDOptions, error) { return IDOptionsFromLookup(os.LookupEnv) }

// IDOptionsFromLookup is IDOptionsFromEnv over any lookup.
func IDOptionsFromLookup(lookup func(string) (string, bool)) (IDOptions, error) {
	var o IDOptions
	if v, ok := lookup(bootstrap.EnvCommID); ok && strings.TrimSpace(v) != "" {
		host, _, err := net.SplitHostPort(strings.TrimSpace(v))
		if err != nil {
			return o, fmt.Errorf("ccl: invalid %s=%q: %v (want host:port, e.g. 10.0.0.1:29500 or [::1]:29500)", bootstrap.EnvCommID, v, err)
		}
		o.Host = host
	}
	d, _, err := lookupTimeout(lookup)
	o.Timeout = d
	return o, err
}

// NewUniqueID is NewUniqueIDWith the options IDOptionsFromEnv reads
// (GCCL_COMM_ID, GCCL_TIMEOUT): ncclGetUniqueId's behaviour, for the
// programs that want it.
func NewUniqueID() (UniqueID, error) {
	o, err := IDOptionsFromEnv()
	if err != nil {
		return UniqueID{}, err
	}
	return NewUniqueIDWith(o)
}

// NewUniqueIDWith starts a bootstrap root in this process and returns the
// id the job's processes pass to InitRank (ncclGetUniqueId). The root
// listens on a free port of o.Host.
func NewUniqueIDWith(o IDOptions) (UniqueID, error) {
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	var token [32]byte
	if _, err := rand.Read(token[:]); err != nil {
		return UniqueID{}, fmt.Errorf("ccl: NewUniqueID: %w", err)
	}
	return serveRoot(net.JoinHostPort(host, "0"), token, o.Timeout)
}

// ServeRoot is ServeRootWith the options IDOptionsFromEnv reads (its
// GCCL_TIMEOUT), for the programs that want NCCL-style configuration.
func ServeRoot(id UniqueID) error {
	o, err := IDOptionsFromEnv()
	if err != nil {
		return err
	}
	return ServeRootWith(id, o)
}

// ServeRootWith starts, in this process, the bootstrap root that id
// names: for an id every process derived alike from its launcher
// (bootstrap.IDFor), one process (rank 0's) must serve it.
func ServeRootWith(id UniqueID, o IDOptions) error {
	addr, err := id.Root()
	if err != nil {
		return fmt.Errorf("ccl: ServeRoot: %w", err)
	}
	_, err = serveRoot(addr, id.Token(), o.Timeout)
	return err
}

func serveRoot(addr string, token [32]byte, timeout time.Duration) (UniqueID, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	r, err := bootstrap.ServeRoot(addr, token, bootstrap.RootOptions{Timeout: timeout})
	if err != nil {
		return UniqueID{}, fmt.Errorf("ccl: bootstrap root: %w", err)
	}
	id, err := bootstrap.MakeUniqueID(r.Addr(), token)
	if err != nil {
		r.Close()
		return UniqueID{}, fmt.Errorf("ccl: %w", err)
	}
	roots.mu.Lock()
	if roots.m == nil {
		roots.m = map[[32]byte]*bootstrap.Root{}
	}
	roots.m[token] = r
	roots.mu.Unlock()
	return id, nil
}

// stopRoot closes the root this process serves for id, if any: for a
// process that made an id for others and holds no rank itself.
func stopRoot(id UniqueID) {
	roots.mu.Lock()
	r := roots.m[id.Token()]
	delete(roots.m, id.Token())
	roots.mu.Unlock()
	if r != nil {
		r.Close()
	}
}

// ReleaseRoot closes the root this process serves for id (ServeRoot),
// once every process left it or heard why the job failed, or after wait:
// for the process that serves a job's root, before it exits. Exiting at
// once, it could take the root down before the root told the others which
// process was lost, and they would name the root's process instead.
func ReleaseRoot(id UniqueID, wait time.Duration) {
	roots.mu.Lock()
	r := roots.m[id.Token()]
	delete(roots.m, id.Token())
	roots.mu.Unlock()
	if r != nil {
		r.Wait(wait)
		r.Close()
	}
}
