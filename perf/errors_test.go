package perf

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
)

// failBackend is the embedded stack whose rank 0 fails: its first
// AllReduce (before anything is enqueued anywhere, so no peer waits), or
// its first Synchronize (after every rank enqueued and completed), or Init.
type failBackend struct {
	Embedded
	initErr, callErr, syncErr error
}

func (b *failBackend) Init(n int, rc RunConfig) ([]Comm, error) {
	if b.initErr != nil {
		return nil, b.initErr
	}
	comms, err := b.Embedded.Init(n, rc)
	if err != nil {
		return nil, err
	}
	comms[0] = &failComm{Comm: comms[0], be: b}
	return comms, nil
}

type failComm struct {
	Comm
	be *failBackend
}

func (c *failComm) AllReduce(send, recv []byte, count int, dt reduce.DataType, op ccl.RedOp) error {
	if c.be.callErr != nil {
		return c.be.callErr
	}
	return c.Comm.AllReduce(send, recv, count, dt, op)
}

func (c *failComm) Synchronize() error {
	if err := c.Comm.Synchronize(); err != nil {
		return err
	}
	return c.be.syncErr
}

// TestStackErrors: errors of the stack end the run with nccl-tests' codes
// (3 for a stack error, 4 for a timeout) and the error on stderr.
func TestStackErrors(t *testing.T) {
	cleanBwEnv(t)
	boom := errors.New("boom from the stack")
	for _, tc := range []struct {
		name string
		be   *failBackend
		code int
		want string
	}{
		{"call error", &failBackend{callErr: boom}, exitStack, "boom from the stack"},
		{"sync error", &failBackend{syncErr: fmt.Errorf("rank 0: %w", boom)}, exitStack, "rank 0: boom from the stack"},
		{"timeout", &failBackend{syncErr: fmt.Errorf("waiting: %w", ccl.ErrTimeout)}, exitTimeout, "waiting: "},
		{"init", &failBackend{initErr: errors.New("no such transport")}, exitInvalidUsage, "config proto=auto algo=auto nchannels=auto buffsize=default: no such transport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(t, AllReduce, tc.be, "-g", "2", "-b", "64", "-e", "64", "-n", "1", "-w", "0")
			if r.code != tc.code {
				t.Errorf("exit %d, want %d", r.code, tc.code)
			}
			if !strings.HasPrefix(r.stderr, "all_reduce_perf: ") || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr %q, want it to contain %q", r.stderr, tc.want)
			}
			if strings.Contains(r.stdout, "# Out of bounds values") {
				t.Errorf("a failed run printed the summary as if it had completed")
			}
		})
	}
}
