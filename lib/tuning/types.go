// Package tuning decides how a collective runs: which algorithm, protocol
// and channel count. It holds the built-in alpha-beta cost model (after
// NCCL's tuning.cc) and the tuning tables that override it, with their JSON
// format and the export to NCCL's example-tuner CSV. Everything here is
// pure: no I/O beyond reading and writing the files it is handed.
package tuning

import (
	"fmt"
	"strings"

	"github.com/gccl/gccl/lib/proto"
)

// Coll is a collective the model and the tables know about.
type Coll int

const (
	AllReduce Coll = iota
	AllGather
	ReduceScatter
	Broadcast
	Reduce
	NumColls
)

var collNames = [...]string{"allreduce", "allgather", "reducescatter", "broadcast", "reduce"}

func (c Coll) String() string {
	if c < 0 || c >= NumColls {
		return fmt.Sprintf("Coll(%d)", int(c))
	}
	return collNames[c]
}

// Colls lists every collective.
func Colls() []Coll { return []Coll{AllReduce, AllGather, ReduceScatter, Broadcast, Reduce} }

// ParseColl reads a collective name, case-insensitively ("allreduce",
// "all_reduce" and "AllReduce" all work).
func ParseColl(s string) (Coll, error) {
	k := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "")
	for c, n := range collNames {
		if k == n {
			return Coll(c), nil
		}
	}
	return 0, fmt.Errorf("unknown collective %q (valid: %s)", s, strings.Join(collNames[:], ", "))
}

// Algo is an algorithm.
type Algo int

const (
	Ring Algo = iota
	Tree
	// OneShot: every rank posts its whole input once, as LL lines, where
	// every peer reads it, and computes its own result from all of them in
	// rank order (lib/board). One hop, but each rank reads every peer's
	// data: it wins at small sizes and few ranks only. LL protocol, one
	// channel. gccl's own: NCCL's tuner does not know it.
	OneShot
	// TwoShot (allreduce only): every rank posts its input on the one-shot
	// board; rank b reduces block b of every post, in rank order, and posts
	// it again; every rank reads every reduced block. Two hops, but each
	// rank reads about twice its buffer, where the one-shot reads every
	// rank's: it wins over the one-shot at many ranks, over the ring
	// (2(n-1) hops) at small and mid sizes. LL, one channel; gccl's own,
	// like OneShot.
	TwoShot
	NumAlgos
)

var algoNames = [...]string{"Ring", "Tree", "OneShot", "TwoShot"}

func (a Algo) String() string {
	if a < 0 || a >= NumAlgos {
		return fmt.Sprintf("Algo(%d)", int(a))
	}
	return algoNames[a]
}

// Algos lists every algorithm.
func Algos() []Algo { return []Algo{Ring, Tree, OneShot, TwoShot} }

// AlgoNames lists every algorithm's name, in Algo order.
func AlgoNames() []string { return algoNames[:] }

// OnBoard reports whether a runs on the one-shot board (lib/board):
// OneShot and TwoShot, made of LL lines in memory every rank reads, so
// one channel, the LL protocol and ranks of one host only.
func (a Algo) OnBoard() bool { return a == OneShot || a == TwoShot }

// ParseAlgo reads an algorithm name, case-insensitively.
func ParseAlgo(s string) (Algo, error) {
	for a, n := range algoNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Algo(a), nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %q (valid: %s)", s, strings.Join(algoNames[:], ", "))
}

// Supports reports whether collective c has an implementation with
// algorithm a: every collective has a ring and a one-shot; only allreduce
// has a tree and a two-shot.
func Supports(c Coll, a Algo) bool {
	switch a {
	case Ring, OneShot:
		return c >= 0 && c < NumColls
	case Tree, TwoShot:
		return c == AllReduce
	}
	return false
}

// AlgoNamesFor lists the names of the algorithms collective c has, in
// Algo order (for messages and flag checks).
func AlgoNamesFor(c Coll) []string {
	var names []string
	for _, a := range Algos() {
		if Supports(c, a) {
			names = append(names, a.String())
		}
	}
	return names
}

// SupportsProto reports whether algorithm a runs protocol p: the board's
// algorithms are made of LL lines; Ring and Tree run every protocol.
func SupportsProto(a Algo, p proto.Protocol) bool {
	if a.OnBoard() {
		return p == proto.LL
	}
	return p.Valid()
}

// Choice is how one operation runs.
type Choice struct {
	Algo      Algo
	Proto     proto.Protocol
	NChannels int
	// BuffSize is the FIFO size of the protocol in bytes; 0 keeps the
	// communicator's.
	BuffSize int
}

func (c Choice) String() string {
	s := fmt.Sprintf("%s/%s/%dch", c.Algo, c.Proto, c.NChannels)
	if c.BuffSize > 0 {
		s += fmt.Sprintf("/buff=%d", c.BuffSize)
	}
	return s
}
