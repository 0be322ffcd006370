package ccl

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/tuning"
)

// smallBuffers makes "several times the protocol buffer" cheap to reach.
var smallBuffers = Config{BuffSize: 32 << 10, LLBuffSize: 1 << 10, LL128BuffSize: 16 << 10}

// initT creates n communicators and destroys them when the test ends.
func initT(t testing.TB, n int, cfg Config) []*Comm {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	comms, err := InitAll(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range comms {
			c.Destroy()
		}
	})
	return comms
}

// perRank runs f for every rank in its own goroutine and waits.
func perRank(comms []*Comm, f func(c *Comm)) {
	var wg sync.WaitGroup
	for _, c := range comms {
		wg.Add(1)
		go func(c *Comm) {
			defer wg.Done()
			f(c)
		}(c)
	}
	wg.Wait()
}

// perRankErr runs f for every rank in its own goroutine, waits, and
// returns the first error any returned.
func perRankErr(comms []*Comm, f func(c *Comm) error) error {
	errs := make(chan error, len(comms))
	perRank(comms, func(c *Comm) { errs <- f(c) })
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pattern fills n bytes with a value that depends on (tag, i).
func pattern(tag, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + tag*29 + i>>8)
	}
	return b
}

// settleGoroutines waits until the goroutine count drops to at most want.
func settleGoroutines(want int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func f32s(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// protoReq and algoReq read a protocol or an algorithm name ("" and
// "auto": auto) for a test's Config or Forced; a bad name is a typo in
// the test, and panics.
func protoReq(s string) tuning.ProtoReq {
	r, err := tuning.ParseProtoReq(s)
	if err != nil {
		panic(err)
	}
	return r
}

func algoReq(s string) tuning.AlgoReq {
	r, err := tuning.ParseAlgoReq(s)
	if err != nil {
		panic(err)
	}
	return r
}

// allocsPerCall is testing.AllocsPerRun of call(0) while rank 1 makes
// the same calls beside it (a collective of two ranks needs both): the
// allocations of one rank's call.
func allocsPerCall(runs int, call func(rank int)) float64 {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < runs+1; i++ { // AllocsPerRun calls once more to warm up
			call(1)
		}
	}()
	allocs := testing.AllocsPerRun(runs, func() { call(0) })
	<-done
	return allocs
}

// allReduceLoop runs iters float32 sum allreduces of count elements on c,
// each synchronized; it reports an error on tb and stops at the first.
func allReduceLoop(tb testing.TB, c *Comm, in, out []byte, count, iters int) {
	for i := 0; i < iters; i++ {
		if err := c.AllReduce(in, out, count, Float32, Sum); err != nil {
			tb.Error(err)
			return
		}
		if err := c.Synchronize(); err != nil {
			tb.Error(err)
			return
		}
	}
}
