// Package ccl is the public API of the embedded collective stack:
// communicators of N ranks in one process (ncclCommInitAll), collectives,
// send/recv and groups, asynchronous on a per-communicator stream.
//
// A Comm is driven by one goroutine at a time, like an NCCL communicator on
// one host thread: calls enqueue work and return; Synchronize waits for it.
// Each (rank, channel) runs in its own goroutine.
package ccl

import (
	"fmt"

	"github.com/gccl/gccl/lib/reduce"
)

// DataType is the element type of a buffer.
type DataType = reduce.DataType

// The data types.
const (
	Int8     = reduce.Int8
	Uint8    = reduce.Uint8
	Int32    = reduce.Int32
	Uint32   = reduce.Uint32
	Int64    = reduce.Int64
	Uint64   = reduce.Uint64
	Float16  = reduce.Float16
	Float32  = reduce.Float32
	Float64  = reduce.Float64
	Bfloat16 = reduce.Bfloat16
)

// RedOp is a reduction: an operator and, for PreMulSum, the scalar each
// rank's input is multiplied by before the sum.
type RedOp struct {
	Op     reduce.Op
	Scalar float64 // used by PreMulSum only
}

// The reductions. Avg sums, then divides once by the rank count.
var (
	Sum  = RedOp{Op: reduce.Sum}
	Prod = RedOp{Op: reduce.Prod}
	Max  = RedOp{Op: reduce.Max}
	Min  = RedOp{Op: reduce.Min}
	Avg  = RedOp{Op: reduce.Avg}
)

// PreMulSum multiplies every input by scalar, then sums
// (ncclRedOpCreatePreMulSum). For integer types scalar must be integral.
func PreMulSum(scalar float64) RedOp { return RedOp{Op: reduce.PreMulSum, Scalar: scalar} }

func (o RedOp) String() string {
	if o.Op == reduce.PreMulSum {
		return fmt.Sprintf("premulsum(%g)", o.Scalar)
	}
	return o.Op.String()
}

// Coll names an operation.
type Coll int

const (
	CollAllReduce Coll = iota
	CollAllGather
	CollReduceScatter
	CollBroadcast
	CollReduce
	CollAlltoAll
	CollGather
	CollScatter
	CollSend
	CollRecv

	// collStagedCopy is internal: copy send into recv after the rest of the
	// plan (in-place alltoall's staging buffer).
	collStagedCopy
)

var collNames = [...]string{"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "gather", "scatter", "send", "recv", "stagedcopy"}

func (c Coll) String() string {
	if c < 0 || int(c) >= len(collNames) {
		return fmt.Sprintf("Coll(%d)", int(c))
	}
	return collNames[c]
}

// Choice is what the stack chose for an operation.
type Choice struct {
	Coll      Coll
	Algo      string // "Ring", "Tree" or "P2P"
	Proto     string // "LL", "LL128", "Simple"
	NChannels int    // channels that carry data
	Bytes     int64  // bytes per rank the choice was made for
	NHosts    int    // hosts the ranks are grouped into
	BuffSize  int    // the FIFO bytes of Proto it ran with
	// Source says who decided: "forced" (the Config, or Force),
	// "table" (a tuning-table rule), "model" (the cost model), or a mix
	// such as "forced+model" when only some fields were forced.
	Source string
	// PredictedUs is the cost model's time for the choice, in
	// microseconds; 0 when the model has no figure for it (p2p).
	PredictedUs float64
}
