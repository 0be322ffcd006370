package ccl

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A ring of sends much larger than the FIFOs deadlocks unless the group's
// send and receive progress together.
func TestGroupRingSendRecvLargerThanFifo(t *testing.T) {
	for _, proto := range []string{"", "LL", "LL128", "Simple"} {
		for _, n := range []int{1, 2, 3, 5} {
			t.Run(fmt.Sprintf("%s/n=%d", proto, n), func(t *testing.T) {
				cfg := smallBuffers
				cfg.Proto, cfg.NChannels = protoReq(proto), 2
				comms := initT(t, n, cfg)
				const size = 300_001 // ~10x the Simple FIFO, odd
				got := make([][]byte, n)
				perRank(comms, func(c *Comm) {
					r := c.Rank()
					got[r] = make([]byte, size)
					if err := c.GroupStart(); err != nil {
						t.Error(err)
					}
					if err := c.Send(pattern(r, size), size, Uint8, (r+1)%n); err != nil {
						t.Error(err)
					}
					if err := c.Recv(got[r], size, Uint8, (r-1+n)%n); err != nil {
						t.Error(err)
					}
					if err := c.GroupEnd(); err != nil {
						t.Error(err)
					}
					if err := c.Synchronize(); err != nil {
						t.Error(err)
					}
				})
				for r := 0; r < n; r++ {
					if !bytes.Equal(got[r], pattern((r-1+n)%n, size)) {
						t.Fatalf("rank %d received wrong data", r)
					}
				}
			})
		}
	}
}

// Every rank sends a distinct message to every rank, itself included, in
// one group, with sizes that differ per pair (some empty).
func TestGroupAllPairs(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			cfg := smallBuffers
			cfg.NChannels = 3
			comms := initT(t, n, cfg)
			size := func(from, to int) int { return (from*7 + to*13) % 5 * 9000 }
			tag := func(from, to int) int { return from*100 + to }
			got := make([][][]byte, n)
			perRank(comms, func(c *Comm) {
				r := c.Rank()
				got[r] = make([][]byte, n)
				c.GroupStart()
				for p := 0; p < n; p++ {
					got[r][p] = make([]byte, size(p, r))
					if err := c.Recv(got[r][p], size(p, r), Uint8, p); err != nil {
						t.Error(err)
					}
					if err := c.Send(pattern(tag(r, p), size(r, p)), size(r, p), Uint8, p); err != nil {
						t.Error(err)
					}
				}
				if err := c.GroupEnd(); err != nil {
					t.Error(err)
				}
				if err := c.Synchronize(); err != nil {
					t.Error(err)
				}
			})
			for r := 0; r < n; r++ {
				for p := 0; p < n; p++ {
					if !bytes.Equal(got[r][p], pattern(tag(p, r), size(p, r))) {
						t.Fatalf("rank %d: message from %d is wrong", r, p)
					}
				}
			}
		})
	}
}

// Nested groups launch once, at the outermost GroupEnd; collectives and
// p2p mix in one group; one goroutine can drive every rank.
func TestGroupNestedMixedSingleDriver(t *testing.T) {
	const n, count = 3, 5000
	comms := initT(t, n, smallBuffers)
	sums := make([][]float32, n)
	recvd := make([][]byte, n)
	for _, c := range comms { // one goroutine drives all ranks, as with NCCL's one thread for many GPUs
		r := c.Rank()
		in := make([]float32, count)
		for i := range in {
			in[i] = float32(r*count + i)
		}
		sums[r] = make([]float32, count)
		recvd[r] = make([]byte, 777)
		must(t, c.GroupStart())
		must(t, c.GroupStart())
		must(t, c.AllReduce(f32s(in), asBytes(sums[r]), count, Float32, Sum))
		must(t, c.Send(pattern(r, 777), 777, Uint8, (r+1)%n))
		must(t, c.GroupEnd())
		if c.LastChoice().Algo != "" && c.groupDepth != 1 {
			t.Fatalf("inner GroupEnd must not launch: depth %d", c.groupDepth)
		}
		must(t, c.Recv(recvd[r], 777, Uint8, (r+n-1)%n))
		must(t, c.GroupEnd())
	}
	for _, c := range comms {
		must(t, c.Synchronize())
	}
	for r := 0; r < n; r++ {
		for i := 0; i < count; i++ {
			want := float32(n*i + count*n*(n-1)/2)
			if sums[r][i] != want {
				t.Fatalf("rank %d sum[%d]=%v want %v", r, i, sums[r][i], want)
			}
		}
		if !bytes.Equal(recvd[r], pattern((r+n-1)%n, 777)) {
			t.Fatalf("rank %d: wrong p2p data", r)
		}
	}
}

// An invalid call poisons its group: the call and GroupEnd report it,
// nothing runs, and the communicator stays usable.
func TestGroupErrorCancelsGroup(t *testing.T) {
	comms := initT(t, 2, Config{})
	perRank(comms, func(c *Comm) {
		buf := make([]byte, 8)
		must(t, c.GroupStart())
		must(t, c.Send(buf, 8, Uint8, 1-c.Rank()))
		if err := c.Recv(buf, 8, Uint8, 7); err == nil || !strings.Contains(err.Error(), "peer 7 is out of range") {
			t.Errorf("want a peer range error, got %v", err)
		}
		err := c.GroupEnd()
		if err == nil || !strings.Contains(err.Error(), "group not launched") {
			t.Errorf("GroupEnd: want the group's error, got %v", err)
		}
		must(t, c.Synchronize())
		// Still usable.
		out := make([]byte, 4)
		must(t, c.AllReduce(f32s([]float32{1}), out, 1, Float32, Sum))
		must(t, c.Synchronize())
		if got := asF32(out)[0]; got != 2 {
			t.Errorf("allreduce after a cancelled group: %v", got)
		}
	})
	if err := comms[0].GroupEnd(); err == nil {
		t.Fatal("GroupEnd without GroupStart must fail")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
