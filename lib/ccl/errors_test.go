package ccl

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/tuning"
)

func asBytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

func asF32(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func TestInvalidArguments(t *testing.T) {
	comms := initT(t, 3, Config{})
	c := comms[1]
	b16 := make([]byte, 16)
	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"nil send", func() error { return c.AllReduce(nil, b16, 4, Float32, Sum) }, "send buffer is nil"},
		{"short recv", func() error { return c.AllReduce(b16, b16[:8], 4, Float32, Sum) }, "recv buffer holds 8 bytes"},
		{"allgather recv too short", func() error { return c.AllGather(b16[:8], b16, 2, Float32) }, "recv buffer holds 16 bytes but 6 elements"},
		{"negative count", func() error { return c.AllReduce(b16, b16, -1, Float32, Sum) }, "negative count"},
		{"count overflow", func() error { return c.AllReduce(b16, b16, math.MaxInt/2, Float32, Sum) }, "overflows"},
		{"root out of range", func() error { return c.Broadcast(b16, b16, 4, Float32, 3) }, "root 3 is out of range: want 0..2"},
		{"negative root", func() error { return c.Reduce(b16, b16, 4, Float32, Sum, -1) }, "root -1 is out of range"},
		{"peer out of range", func() error { return c.Send(b16, 4, Float32, 5) }, "peer 5 is out of range"},
		{"unknown type", func() error { return c.AllReduce(b16, b16, 1, DataType(42), Sum) }, "unknown data type"},
		{"unknown op", func() error { return c.AllReduce(b16, b16, 1, Float32, RedOp{Op: reduce.Op(42)}) }, "unknown reduction"},
		{"premulsum fractional int scalar", func() error { return c.AllReduce(b16, b16, 1, Int32, PreMulSum(0.5)) }, "scalar"},
		{"overlap not in place", func() error { return c.AllReduce(b16[:8], b16[4:12], 2, Float32, Sum) }, "overlap without being in place"},
		{"alltoall nil recv", func() error { return c.AlltoAll(make([]byte, 12), nil, 1, Float32) }, "recv buffer is nil"},
		{"alltoall overlap", func() error { b := make([]byte, 16); return c.AlltoAll(b[:12], b[4:], 1, Float32) }, "overlap without being the same buffer"},
		{"gather root", func() error { return c.Gather(b16, b16, 1, Float32, 9) }, "root 9 is out of range"},
	}
	for _, tc := range cases {
		err := tc.call()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want error containing %q, got %v", tc.name, tc.want, err)
		}
	}
	must(t, c.Synchronize()) // nothing was enqueued
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Proto: tuning.ForceProto(proto.NumProtocols)}, "Config.Proto: unknown protocol Protocol(3) (valid: LL, LL128, Simple, auto)"},
		{Config{Algo: tuning.ForceAlgo(-1)}, "Config.Algo: unknown algorithm Algo(-1) (valid: Ring, Tree, OneShot, TwoShot, auto)"},
		{Config{NChannels: 65}, "want 1..64"},
		{Config{NChannels: -1}, "NChannels"},
		{Config{BuffSize: 1000}, "Config.BuffSize: Simple buffer size 1000 is invalid"},
		{Config{LL128BuffSize: 4096}, "LL128"},
	} {
		if _, err := InitAll(2, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: want error containing %q, got %v", tc.cfg, tc.want, err)
		}
	}
	if _, err := InitAll(0, Config{}); err == nil {
		t.Error("InitAll(0) must fail")
	}
}

func TestEnvOverrides(t *testing.T) {
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	env[EnvProto], env[EnvNChannels], env[EnvBuffSize], env[EnvTimeout] = "ll128", "3", "1M", "2.5"
	c, err := Config{Proto: protoReq("Simple")}.FromLookup(lookup)
	if err != nil || c.Proto.String() != "LL128" || c.NChannels != 3 || c.BuffSize != 1<<20 || c.Timeout != 2500*time.Millisecond {
		t.Fatalf("env overrides: %+v %v", c, err)
	}
	for k, v := range map[string]string{
		EnvProto: "fast", EnvAlgo: "Butterfly", EnvNChannels: "0", EnvBuffSize: "12345",
		EnvLLBuffSize: "x", EnvLL128BuffSize: "1K", EnvTimeout: "soon", EnvRanksPerHost: "-2", EnvDebug: "LOUD",
		EnvDirectDisable: "yes",
	} {
		env = map[string]string{k: v}
		_, err := Config{}.FromLookup(lookup)
		if err == nil || !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), v) {
			t.Errorf("%s=%s: want an error naming the variable and value, got %v", k, v, err)
		}
	}
	env = map[string]string{EnvDirectDisable: "1"}
	if c, err := (Config{}).FromLookup(lookup); err != nil || !c.NoDirect {
		t.Errorf("GCCL_P2P_DIRECT_DISABLE=1: NoDirect %v, %v", c.NoDirect, err)
	}
	env = map[string]string{EnvTimeout: "0"}
	if c, err := (Config{}).FromLookup(lookup); err != nil || c.Timeout >= 0 {
		t.Errorf("GCCL_TIMEOUT=0 should wait forever: %v %v", c.Timeout, err)
	}
}

// InitAll runs the Config it is given: GCCL_ALGO and GCCL_PROTO, set to
// forced values (or to an invalid one), change nothing unless the caller
// asks for the environment (ConfigFromEnv, Config.FromEnv), which then
// applies them over the Config's fields, as NCCL's variables do.
func TestInitIgnoresEnvironment(t *testing.T) {
	t.Setenv(EnvProto, "LL")
	t.Setenv(EnvAlgo, "Tree")
	allReduce := func(cfg Config) Choice {
		t.Helper()
		comms := initT(t, 2, cfg)
		perRank(comms, func(c *Comm) {
			buf := make([]byte, 4096)
			must(t, c.AllReduce(buf, buf, 1024, Float32, Sum))
			must(t, c.Synchronize())
		})
		return comms[0].LastChoice()
	}
	if ch := allReduce(Config{Proto: protoReq("Simple"), Algo: algoReq("Ring")}); ch.Proto != "Simple" || ch.Algo != "Ring" {
		t.Errorf("Config Ring/Simple ran %s/%s: the environment must not override the caller", ch.Algo, ch.Proto)
	}
	if ch := allReduce(Config{}); strings.Contains(ch.Source, "forced") {
		t.Errorf("Config{} ran %s/%s chosen by %q: the environment must not force it", ch.Algo, ch.Proto, ch.Source)
	}
	cfg, err := ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if ch := allReduce(cfg); ch.Proto != "LL" || ch.Algo != "Tree" || !strings.HasPrefix(ch.Source, "forced") {
		t.Errorf("ConfigFromEnv ran %s/%s chosen by %q, want Tree/LL forced by the environment", ch.Algo, ch.Proto, ch.Source)
	}
	if c, err := (Config{Proto: protoReq("Simple"), Algo: algoReq("Ring"), NChannels: 2}).FromEnv(); err != nil || c.Proto.String() != "LL" || c.Algo.String() != "Tree" || c.NChannels != 2 {
		t.Errorf("FromEnv over Ring/Simple/2 channels: %+v, %v; want the variables over the fields, the rest kept", c, err)
	}

	t.Setenv(EnvAlgo, "Butterfly") // invalid: read, it fails
	comms, err := InitAll(2, Config{Proto: protoReq("Simple"), Algo: algoReq("Ring")})
	if err != nil {
		t.Fatalf("InitAll read the invalid %s from the environment: %v", EnvAlgo, err)
	}
	for _, c := range comms {
		c.Destroy()
	}
	if _, err := ConfigFromEnv(); err == nil || !strings.Contains(err.Error(), EnvAlgo) {
		t.Errorf("ConfigFromEnv with the invalid %s: %v, want an error naming it", EnvAlgo, err)
	}
}

// A rank that never joins makes the others fail within the timeout, and
// every rank then reports the abort: every protocol, and the board's
// algorithms (the one-shot, the two-shot).
func TestTimeoutAbortsEveryRank(t *testing.T) {
	for _, proto := range []string{"LL", "LL128", "Simple", "OneShot", "TwoShot"} {
		cfg := Config{Timeout: 200 * time.Millisecond}
		if strings.HasSuffix(proto, "Shot") {
			cfg.Proto, cfg.Algo = protoReq("LL"), algoReq(proto)
		} else {
			cfg.Proto = protoReq(proto)
		}
		comms := initT(t, 3, cfg)
		start := time.Now()
		errs := make([]error, 2)
		perRank(comms[:2], func(c *Comm) { // rank 2 never calls
			buf := make([]byte, 4096)
			must(t, c.AllReduce(buf, buf, 1024, Float32, Sum))
			errs[c.Rank()] = c.Synchronize()
		})
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("%s: took %v to fail", proto, el)
		}
		for r, err := range errs {
			if !errors.Is(err, ErrAborted) {
				t.Errorf("%s rank %d: want ErrAborted, got %v", proto, r, err)
			}
		}
		if !errors.Is(errs[0], ErrTimeout) && !errors.Is(errs[1], ErrTimeout) {
			t.Errorf("%s: the cause should be a timeout: %v / %v", proto, errs[0], errs[1])
		}
		if !strings.Contains(errs[0].Error(), "rank") {
			t.Errorf("%s: the error should say where: %v", proto, errs[0])
		}
		if err := comms[2].AllReduce(make([]byte, 4), make([]byte, 4), 1, Float32, Sum); !errors.Is(err, ErrAborted) {
			t.Errorf("%s: a call after the abort: want ErrAborted, got %v", proto, err)
		}
	}
}

// Abort from another goroutine unblocks ranks parked in Synchronize.
func TestAbortUnblocks(t *testing.T) {
	comms := initT(t, 2, Config{Timeout: -1}) // no timeout: only Abort can end it
	buf := make([]byte, 1<<20)
	must(t, comms[0].AllReduce(buf, buf, 1<<18, Float32, Sum)) // rank 1 never joins
	done := make(chan error, 1)
	go func() { done <- comms[0].Synchronize() }()
	time.Sleep(50 * time.Millisecond)
	must(t, comms[1].Abort())
	select {
	case err := <-done:
		if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "rank 1 called Abort") {
			t.Fatalf("want the abort, got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Abort did not unblock Synchronize")
	}
}

// Destroy leaves no goroutine behind, after success and after an abort.
func TestDestroyLeavesNoGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	for _, abort := range []bool{false, true} {
		timeout := 20 * time.Second // the run that completes must not time out on a loaded machine
		if abort {
			timeout = 300 * time.Millisecond
		}
		comms, err := InitAll(4, Config{NChannels: 3, Timeout: timeout})
		must(t, err)
		perRank(comms, func(c *Comm) {
			if abort && c.Rank() == 3 {
				return
			}
			b := make([]byte, 40000)
			c.AllReduce(b, b, 10000, Float32, Sum)
			c.Synchronize()
		})
		for _, c := range comms {
			c.Destroy()
		}
		if got := settleGoroutines(base); got > base {
			t.Fatalf("abort=%v: %d goroutines after Destroy, %d before", abort, got, base)
		}
		if err := comms[0].Destroy(); !errors.Is(err, ErrDestroyed) {
			t.Fatalf("second Destroy: %v", err)
		}
		if err := comms[0].AllReduce(nil, nil, 0, Float32, Sum); !errors.Is(err, ErrDestroyed) {
			t.Fatalf("call after Destroy: %v", err)
		}
	}
}
