package ccl

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gccl/gccl/internal/size"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/shm"
	"github.com/gccl/gccl/lib/transport"
	"github.com/gccl/gccl/lib/tuning"
)

// MaxChannels is the most channels a communicator may use (NCCL's MAXCHANNELS).
const MaxChannels = 64

// DefaultTimeout is how long a wait may see no progress before the
// communicator aborts.
const DefaultTimeout = 60 * time.Second

// autoLLBytes is the per-rank size below which "auto" picks LL (until the
// cost model arrives).
const autoLLBytes = 64 << 10

// DefaultSimpleBuffSize is the Simple FIFO size when Config.BuffSize is 0:
// 1 MiB, a quarter of NCCL's (proto.DefaultSimpleBuffSize says why).
const DefaultSimpleBuffSize = proto.DefaultSimpleBuffSize

// Config configures a set of communicators. The zero value is "auto"
// everywhere. InitAll and InitRanks run exactly the Config they are given:
// the library reads no GCCL_* variable behind its caller. A program that
// wants NCCL-style configuration by the environment asks for it with
// ConfigFromEnv or Config.FromEnv.
type Config struct {
	// Proto forces a protocol (tuning.ForceProto(proto.LL), or
	// tuning.ParseProtoReq of a name); the zero value, auto, lets the
	// stack choose per operation.
	Proto tuning.ProtoReq
	// Algo forces an algorithm: Ring, Tree (allreduce only), OneShot (LL
	// only, one channel) or TwoShot (allreduce only, LL only, one
	// channel); the zero value, auto, lets the stack choose per operation.
	Algo tuning.AlgoReq
	// NChannels forces the channel count (1..64); 0 is auto: min(cores, 4).
	NChannels int
	// MaxNChannels is the channels each rank starts (NCCL_MAX_NCHANNELS),
	// the most any operation may use: 1..64, at least NChannels. 0 starts
	// NChannels when it is forced, else min(cores, 4).
	MaxNChannels int
	// BuffSize, LLBuffSize and LL128BuffSize are the FIFO sizes in bytes of
	// Simple, LL and LL128; 0 keeps the defaults (1 MiB, 512 KiB, 4800 KB: NCCL's but
	// Simple's, see DefaultSimpleBuffSize).
	BuffSize, LLBuffSize, LL128BuffSize int
	// Timeout aborts the communicators when a wait sees no progress for this
	// long; 0 means DefaultTimeout, a negative value waits forever.
	Timeout time.Duration
	// RanksPerHost groups consecutive ranks into hosts of this many ranks
	// (the last host may hold fewer), as if they ran on separate machines:
	// trees and the cost model see the hosts. 0 puts every rank of the
	// process on one host.
	RanksPerHost int

	// TuningFile is a tuning table (lib/tuning's JSON) whose rules choose
	// the algorithm, protocol and channels by size; Tuning is the same,
	// already loaded (it wins over TuningFile). Sizes no rule covers go to
	// the cost model. Forced Proto/Algo/NChannels win over both.
	TuningFile string
	Tuning     *tuning.Table
	// ModelFile overrides the cost model's constants (lib/tuning's
	// constants JSON; a partial file changes only what it names).
	ModelFile string
	// NoDirect turns off direct reads between ranks of one process
	// (GCCL_P2P_DIRECT_DISABLE=1, after NCCL's variable): a Simple step is
	// then always copied through the FIFO's slot, as across processes. By
	// default a rank posts a step whose bytes already sit in its own input
	// or output by reference, and the peer reads them from there.
	NoDirect bool
	// NetSockets is the TCP sockets per network connection between hosts
	// (GCCL_NSOCKS, 1..16; 0: one): a Simple slice of at least 64 KiB a
	// socket is cut into that many parts. NetSocketThreads is the
	// goroutines per connection end that move them (GCCL_NSOCKS_THREADS,
	// 1..NetSockets; 0: one, the proxy). Every process of a job must use
	// the same NetSockets.
	NetSockets, NetSocketThreads int
	// HostID is this process's host identity in a job across processes
	// (GCCL_HOSTID): processes with the same one connect through shared
	// memory, others through the network. "" is the hostname and the boot
	// id.
	HostID string
	// SocketIfname picks the network interface of a job across hosts
	// (GCCL_SOCKET_IFNAME, NCCL_SOCKET_IFNAME's syntax: prefixes, =exact,
	// ^exclude); "" picks the first interface that is up, not loopback.
	SocketIfname string
	// NetSpin is how long idle network proxies poll before they park
	// (GCCL_NET_SPIN); 0 parks at once, the default (parseNetSpin says
	// why).
	NetSpin time.Duration
	// ShmDir is the directory of the shared-memory segments of a job
	// across processes (GCCL_SHM_DIR); "" is shm.DefaultDir (/dev/shm).
	ShmDir string
	// Debug is GCCL_DEBUG: "INFO" logs one line per operation with the
	// choice and the model's predicted time; "" or "WARN" logs nothing.
	Debug string
	// DebugWriter receives the debug lines; nil means os.Stderr.
	DebugWriter io.Writer

	// TraceSteps records every rank's step timeline from the start, each
	// track keeping this many records (Comm.StartTrace; TakeTrace takes
	// them); 0 records nothing until StartTrace.
	TraceSteps int

	// Test hooks: where FIFO step counters start, and the LL flag space.
	FifoOptions proto.FifoOptions
}

// DefaultMaxNChannels is the channel count a communicator starts when
// nothing sets it: one per processor, at most 4.
func DefaultMaxNChannels() int { return min(runtime.GOMAXPROCS(0), 4) }

// Env variables read by FromEnv (EnvHostID, in multiproc.go, too), and
// by IDOptionsFromEnv (EnvTimeout; bootstrap.EnvCommID).
const (
	EnvProto         = "GCCL_PROTO"
	EnvAlgo          = "GCCL_ALGO"
	EnvNChannels     = "GCCL_NCHANNELS"
	EnvMaxNChannels  = "GCCL_MAX_NCHANNELS"
	EnvBuffSize      = "GCCL_BUFFSIZE"
	EnvLLBuffSize    = "GCCL_LL_BUFFSIZE"
	EnvLL128BuffSize = "GCCL_LL128_BUFFSIZE"
	EnvTimeout       = "GCCL_TIMEOUT"
	EnvRanksPerHost  = "GCCL_RANKS_PER_HOST"
	EnvTuningFile    = "GCCL_TUNING_FILE"
	EnvModelFile     = "GCCL_MODEL_FILE"
	EnvDebug         = "GCCL_DEBUG"
	EnvDirectDisable = "GCCL_P2P_DIRECT_DISABLE"
	// EnvSocketIfname picks the network interface of a job across hosts
	// (NCCL_SOCKET_IFNAME's syntax: prefixes, =exact, ^exclude).
	EnvSocketIfname = "GCCL_SOCKET_IFNAME"
	// EnvNetSpin overrides how long idle network proxies poll before they
	// park (a duration; 0: park at once). Default: see netSpin.
	EnvNetSpin = "GCCL_NET_SPIN"
	// EnvNSocks and EnvNSocksThreads set Config.NetSockets and
	// Config.NetSocketThreads.
	EnvNSocks        = "GCCL_NSOCKS"
	EnvNSocksThreads = "GCCL_NSOCKS_THREADS"
	// EnvShmDir sets Config.ShmDir (shm.EnvDir).
	EnvShmDir = shm.EnvDir
)

// ChoiceEnv are the variables that change which algorithm, protocol,
// channel count or buffer an operation runs with: a benchmark that labels
// its results by configuration must apply or refuse each of them.
var ChoiceEnv = []string{EnvProto, EnvAlgo, EnvNChannels, EnvMaxNChannels, EnvBuffSize, EnvTuningFile, EnvModelFile}

// FromEnv returns c with every GCCL_* variable that is set applied on top:
// NCCL's behaviour, where the environment configures the library, for the
// programs that want it. The library never calls it on its own: a caller
// whose settings should beat the environment (the perf binaries' flags)
// calls it first and overrides the result, or leaves it out. An invalid
// value is an error naming the variable, the value and what is valid.
func (c Config) FromEnv() (Config, error) { return c.FromLookup(os.LookupEnv) }

// ConfigFromEnv is Config{}.FromEnv(): the configuration the GCCL_*
// variables ask for, everything else automatic.
func ConfigFromEnv() (Config, error) { return Config{}.FromEnv() }

// FromLookup is FromEnv over any lookup (os.LookupEnv, or a test's map).
func (c Config) FromLookup(lookup func(string) (string, bool)) (Config, error) {
	bad := func(name, val, valid string) error {
		return fmt.Errorf("ccl: invalid %s=%q: %s", name, val, valid)
	}
	if v, ok := lookup(EnvProto); ok {
		p, err := tuning.ParseProtoReq(v)
		if err != nil {
			return c, bad(EnvProto, v, "valid values are LL, LL128, Simple or auto")
		}
		c.Proto = p
	}
	if v, ok := lookup(EnvAlgo); ok {
		a, err := tuning.ParseAlgoReq(v)
		if err != nil {
			return c, bad(EnvAlgo, v, "valid values are Ring, Tree, OneShot, TwoShot or auto")
		}
		c.Algo = a
	}
	if v, ok := lookup(EnvNChannels); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > MaxChannels {
			return c, bad(EnvNChannels, v, fmt.Sprintf("want an integer from 1 to %d", MaxChannels))
		}
		c.NChannels = n
	}
	if v, ok := lookup(EnvMaxNChannels); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > MaxChannels {
			return c, bad(EnvMaxNChannels, v, fmt.Sprintf("want an integer from 1 to %d", MaxChannels))
		}
		c.MaxNChannels = n
	}
	sizes := []struct {
		env string
		p   proto.Protocol
		dst *int
	}{{EnvBuffSize, proto.Simple, &c.BuffSize}, {EnvLLBuffSize, proto.LL, &c.LLBuffSize}, {EnvLL128BuffSize, proto.LL128, &c.LL128BuffSize}}
	for _, s := range sizes {
		if v, ok := lookup(s.env); ok {
			n, err := size.Parse(v)
			if err == nil {
				err = proto.ValidateBuffSize(s.p, int(n))
			}
			if err != nil {
				return c, bad(s.env, v, err.Error())
			}
			*s.dst = int(n)
		}
	}
	if v, ok := lookup(EnvRanksPerHost); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return c, bad(EnvRanksPerHost, v, "want a positive integer (ranks per host), or 0 for all ranks on one host")
		}
		c.RanksPerHost = n
	}
	if v, ok := lookup(EnvTuningFile); ok {
		c.TuningFile = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvModelFile); ok {
		c.ModelFile = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvDirectDisable); ok {
		switch strings.TrimSpace(v) {
		case "0", "":
			c.NoDirect = false
		case "1":
			c.NoDirect = true
		default:
			return c, bad(EnvDirectDisable, v, "valid values are 1 (copy every step through the FIFO) or 0")
		}
	}
	for _, e := range []struct {
		env string
		dst *int
	}{{EnvNSocks, &c.NetSockets}, {EnvNSocksThreads, &c.NetSocketThreads}} {
		if v, ok := lookup(e.env); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > transport.MaxSocks {
				return c, bad(e.env, v, fmt.Sprintf("want an integer from 1 to %d", transport.MaxSocks))
			}
			*e.dst = n
		}
	}
	if v, ok := lookup(EnvHostID); ok {
		c.HostID = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvSocketIfname); ok {
		c.SocketIfname = v
	}
	if v, ok := lookup(EnvNetSpin); ok {
		d, err := parseNetSpin(v)
		if err != nil {
			return c, bad(EnvNetSpin, v, "want a duration such as 500us or 2ms, or 0 for none")
		}
		c.NetSpin = d
	}
	if v, ok := lookup(EnvShmDir); ok {
		c.ShmDir = v
	}
	if v, ok := lookup(EnvDebug); ok {
		if _, err := parseDebug(v); err != nil {
			return c, bad(EnvDebug, v, "valid values are INFO, WARN or VERSION (or empty)")
		}
		c.Debug = v
	}
	d, ok, err := lookupTimeout(lookup)
	if err != nil {
		return c, err
	}
	if ok {
		c.Timeout = d
	}
	return c, nil
}

// lookupTimeout reads EnvTimeout: the timeout and whether it is set.
func lookupTimeout(lookup func(string) (string, bool)) (time.Duration, bool, error) {
	v, ok := lookup(EnvTimeout)
	if !ok {
		return 0, false, nil
	}
	d, err := parseTimeout(v)
	if err != nil {
		return 0, false, fmt.Errorf("ccl: invalid %s=%q: %s", EnvTimeout, v, "want seconds (e.g. 30 or 0.5) or a Go duration (e.g. 1m, 500ms); 0 or less waits forever")
	}
	return d, true, nil
}

// parseTimeout reads seconds or a Go duration; zero or negative means forever.
func parseTimeout(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	d, err := time.ParseDuration(v)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			return 0, err
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d <= 0 {
		return -1, nil
	}
	return d, nil
}

// parseDebug reports whether debug level s logs operations (INFO or
// TRACE); WARN, VERSION and "" log nothing.
func parseDebug(s string) (bool, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "WARN", "VERSION":
		return false, nil
	case "INFO", "TRACE":
		return true, nil
	}
	return false, fmt.Errorf("unknown debug level %q (valid: INFO, TRACE, WARN, VERSION)", s)
}

// validAlgo and validProto reject a forced value out of range (a request
// built from a bad constant: the parsers make none).
func validAlgo(r tuning.AlgoReq) error {
	if a, ok := r.Get(); ok && (a < 0 || a >= tuning.NumAlgos) {
		return fmt.Errorf("unknown algorithm %v (valid: %s, auto)", a, strings.Join(tuning.AlgoNames(), ", "))
	}
	return nil
}

func validProto(r tuning.ProtoReq) error {
	if p, ok := r.Get(); ok && !p.Valid() {
		return fmt.Errorf("unknown protocol %v (valid: LL, LL128, Simple, auto)", p)
	}
	return nil
}

// settings is a validated Config: what the communicators actually use.
type settings struct {
	proto         tuning.ProtoReq
	algo          tuning.AlgoReq
	ranksPerHost  int  // 0: every rank on one host
	nChannels     int  // forced count, or 0 for auto
	maxCh         int  // channel goroutines per rank
	maxChAuto     bool // maxCh was not forced (a job across processes fits it to the cores)
	buff          proto.BuffSizes
	timeout       time.Duration
	fifo          proto.FifoOptions
	table         *tuning.Table    // nil: no tuning table
	model         tuning.Constants // the cost model's constants
	debug         io.Writer        // nil: no per-operation log
	simpleBuffSet bool             // Config.BuffSize (or GCCL_BUFFSIZE) chose the Simple FIFO size
	nsocks        int              // sockets per network connection (>= 1)
	nsockThreads  int              // goroutines per network connection end (1..nsocks)
	hostID        string           // Config.HostID ("": hostname and boot id)
	ifname        string           // Config.SocketIfname
	netSpin       time.Duration    // Config.NetSpin (>= 0)
	shmDir        string           // where shared-memory segments live
	traceSteps    int              // Config.TraceSteps
}

// validate returns one specific error per bad field.
func (c Config) validate() (settings, error) {
	s := settings{buff: proto.DefaultBuffSizes(), fifo: c.FifoOptions,
		hostID: strings.TrimSpace(c.HostID), ifname: c.SocketIfname, netSpin: c.NetSpin, shmDir: c.ShmDir}
	if s.shmDir == "" {
		s.shmDir = shm.DefaultDir
	}
	if c.NetSpin < 0 {
		return s, fmt.Errorf("ccl: Config.NetSpin %v is negative: want how long idle network proxies poll (e.g. 500us), or 0 for none", c.NetSpin)
	}
	if c.TraceSteps < 0 {
		return s, fmt.Errorf("ccl: Config.TraceSteps %d is negative: want the records each track of the step timeline keeps, or 0 to record nothing", c.TraceSteps)
	}
	s.traceSteps = c.TraceSteps
	s.fifo.Direct = !c.NoDirect
	s.nsocks, s.nsockThreads = max(c.NetSockets, 1), max(c.NetSocketThreads, 1)
	if c.NetSockets < 0 || c.NetSockets > transport.MaxSocks {
		return s, fmt.Errorf("ccl: Config.NetSockets %d is out of range: want 1..%d, or 0 for one", c.NetSockets, transport.MaxSocks)
	}
	if c.NetSocketThreads < 0 || s.nsockThreads > s.nsocks {
		return s, fmt.Errorf("ccl: Config.NetSocketThreads %d is out of range: want 1..%d (NetSockets), or 0 for one", c.NetSocketThreads, s.nsocks)
	}
	s.proto, s.algo = c.Proto, c.Algo
	if err := validProto(c.Proto); err != nil {
		return s, fmt.Errorf("ccl: Config.Proto: %w", err)
	}
	if err := validAlgo(c.Algo); err != nil {
		return s, fmt.Errorf("ccl: Config.Algo: %w", err)
	}
	if err := (tuning.Request{Algo: c.Algo, Proto: c.Proto}).CheckAlgoProto(); err != nil {
		return s, fmt.Errorf("ccl: Config: %w", err)
	}
	if c.RanksPerHost < 0 {
		return s, fmt.Errorf("ccl: Config.RanksPerHost %d is negative: want ranks per host, or 0 for all ranks on one host", c.RanksPerHost)
	}
	s.ranksPerHost = c.RanksPerHost
	if c.NChannels < 0 || c.NChannels > MaxChannels {
		return s, fmt.Errorf("ccl: Config.NChannels %d is out of range: want 1..%d, or 0 for auto", c.NChannels, MaxChannels)
	}
	s.nChannels = c.NChannels
	if c.MaxNChannels < 0 || c.MaxNChannels > MaxChannels {
		return s, fmt.Errorf("ccl: Config.MaxNChannels %d is out of range: want 1..%d, or 0 for NChannels or auto", c.MaxNChannels, MaxChannels)
	}
	if c.MaxNChannels > 0 && c.MaxNChannels < c.NChannels {
		return s, fmt.Errorf("ccl: Config.MaxNChannels %d is below NChannels %d: the forced count must fit (raise MaxNChannels or leave it 0)", c.MaxNChannels, c.NChannels)
	}
	s.maxCh = c.MaxNChannels
	if s.maxCh == 0 {
		s.maxCh = c.NChannels
	}
	if s.maxCh == 0 {
		s.maxCh = DefaultMaxNChannels()
		s.maxChAuto = true
	}
	for _, b := range []struct {
		field string
		p     proto.Protocol
		v     int
	}{{"BuffSize", proto.Simple, c.BuffSize}, {"LLBuffSize", proto.LL, c.LLBuffSize}, {"LL128BuffSize", proto.LL128, c.LL128BuffSize}} {
		if b.v == 0 {
			continue
		}
		if err := proto.ValidateBuffSize(b.p, b.v); err != nil {
			return s, fmt.Errorf("ccl: Config.%s: %w", b.field, err)
		}
		s.buff[b.p] = b.v
		s.simpleBuffSet = s.simpleBuffSet || b.p == proto.Simple
	}
	if info, err := parseDebug(c.Debug); err != nil {
		return s, fmt.Errorf("ccl: Config.Debug: %w", err)
	} else if info {
		s.debug = c.DebugWriter
		if s.debug == nil {
			s.debug = os.Stderr
		}
	}
	var err error
	s.table = c.Tuning
	if s.table == nil && c.TuningFile != "" {
		if s.table, err = tuning.LoadTable(c.TuningFile); err != nil {
			return s, fmt.Errorf("ccl: Config.TuningFile (GCCL_TUNING_FILE): %w", err)
		}
	}
	if s.table != nil {
		if err := s.table.Validate(); err != nil {
			return s, fmt.Errorf("ccl: Config.Tuning: %w", err)
		}
	}
	s.model = tuning.DefaultConstants()
	if c.ModelFile != "" {
		if s.model, err = tuning.LoadConstants(c.ModelFile); err != nil {
			return s, fmt.Errorf("ccl: Config.ModelFile (GCCL_MODEL_FILE): %w", err)
		}
	}
	s.timeout = c.Timeout
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	if s.timeout < 0 {
		s.timeout = 0 // proto.Waiter: <= 0 waits forever
	}
	return s, nil
}
