package tuning

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gccl/gccl/lib/proto"
)

// Auto is how a request that leaves the choice to the stack is written.
const Auto = "auto"

// AlgoReq is a requested algorithm: a forced one, or auto (the zero
// value), which leaves the choice to the tuning table and the cost model.
type AlgoReq struct {
	a   Algo
	set bool
}

// ForceAlgo requests algorithm a.
func ForceAlgo(a Algo) AlgoReq { return AlgoReq{a: a, set: true} }

// Get returns the forced algorithm, and false for auto.
func (r AlgoReq) Get() (Algo, bool) { return r.a, r.set }

// IsAuto reports whether the choice is left to the stack.
func (r AlgoReq) IsAuto() bool { return !r.set }

// String is "auto" or the algorithm's name.
func (r AlgoReq) String() string {
	if !r.set {
		return Auto
	}
	return r.a.String()
}

// ParseAlgoReq reads an algorithm name or auto ("" is auto too), in any case.
func ParseAlgoReq(s string) (AlgoReq, error) {
	if isAuto(s) {
		return AlgoReq{}, nil
	}
	a, err := ParseAlgo(s)
	if err != nil {
		return AlgoReq{}, fmt.Errorf("unknown algorithm %q (valid: %s, %s)", s, strings.Join(AlgoNames(), ", "), Auto)
	}
	return ForceAlgo(a), nil
}

// ProtoReq is a requested protocol: a forced one, or auto (the zero value).
type ProtoReq struct {
	p   proto.Protocol
	set bool
}

// ForceProto requests protocol p.
func ForceProto(p proto.Protocol) ProtoReq { return ProtoReq{p: p, set: true} }

// Get returns the forced protocol, and false for auto.
func (r ProtoReq) Get() (proto.Protocol, bool) { return r.p, r.set }

// IsAuto reports whether the choice is left to the stack.
func (r ProtoReq) IsAuto() bool { return !r.set }

// String is "auto" or the protocol's name.
func (r ProtoReq) String() string {
	if !r.set {
		return Auto
	}
	return r.p.String()
}

// ParseProtoReq reads a protocol name or auto ("" is auto too), in any case.
func ParseProtoReq(s string) (ProtoReq, error) {
	if isAuto(s) {
		return ProtoReq{}, nil
	}
	p, err := proto.Parse(s)
	if err != nil {
		return ProtoReq{}, fmt.Errorf("unknown protocol %q (valid: %s, %s)", s, strings.Join(protoNames(), ", "), Auto)
	}
	return ForceProto(p), nil
}

func isAuto(s string) bool {
	t := strings.TrimSpace(s)
	return t == "" || strings.EqualFold(t, Auto)
}

func protoNames() []string {
	var names []string
	for _, p := range proto.All() {
		names = append(names, p.String())
	}
	return names
}

// Request is a requested configuration: what a caller forces and what it
// leaves to the stack. The zero value is auto everywhere.
type Request struct {
	Algo  AlgoReq
	Proto ProtoReq
	// NChannels forces the channel count; 0 is auto.
	NChannels int
	// BuffSize is the protocol's FIFO size in bytes; 0 keeps the default.
	BuffSize int
}

// String is the request in --configs' form, ALGO/PROTO/CHANNELS with
// "auto" for what is left to the stack ("Ring/LL/2", "auto/Simple/auto"),
// and "/buff=N" when a buffer size is set.
func (r Request) String() string {
	ch := Auto
	if r.NChannels > 0 {
		ch = strconv.Itoa(r.NChannels)
	}
	s := r.Algo.String() + "/" + r.Proto.String() + "/" + ch
	if r.BuffSize > 0 {
		s += fmt.Sprintf("/buff=%d", r.BuffSize)
	}
	return s
}

// ParseRequest reads a request in String's form without the buffer size:
// ALGO/PROTO/CHANNELS, each part a value or auto, or "auto" alone for all
// auto. Channels run from 1 to maxChannels. An algorithm of the board
// (OneShot, TwoShot) with a protocol other than LL is an error: it runs
// on LL lines only.
func ParseRequest(s string, maxChannels int) (Request, error) {
	if strings.EqualFold(strings.TrimSpace(s), Auto) {
		return Request{}, nil
	}
	parts := strings.Split(strings.TrimSpace(s), "/")
	if len(parts) != 3 {
		return Request{}, fmt.Errorf("not three parts")
	}
	var (
		r   Request
		err error
	)
	if r.Algo, err = ParseAlgoReq(parts[0]); err != nil {
		return Request{}, err
	}
	if r.Proto, err = ParseProtoReq(parts[1]); err != nil {
		return Request{}, err
	}
	if err := r.CheckAlgoProto(); err != nil {
		return Request{}, err
	}
	if !isAuto(parts[2]) {
		n, err := strconv.Atoi(strings.TrimSpace(parts[2]))
		if err != nil || n < 1 || n > maxChannels {
			return Request{}, fmt.Errorf("channels must be 1..%d or %s, not %q", maxChannels, Auto, parts[2])
		}
		r.NChannels = n
	}
	return r, nil
}

// CheckAlgoProto rejects a forced protocol the forced algorithm cannot
// run: the board's algorithms (one-shot, two-shot) are made of LL lines.
func (r Request) CheckAlgoProto() error {
	a, aok := r.Algo.Get()
	p, pok := r.Proto.Get()
	if aok && pok && !SupportsProto(a, p) {
		return fmt.Errorf("algorithm %s runs on LL only, not %s (force LL, or leave the protocol auto)", a, p)
	}
	return nil
}
