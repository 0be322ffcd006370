// Package nccl calls NVIDIA's libnccl and libcudart without cgo, through
// github.com/ebitengine/purego: the real-NCCL backend of the perf binaries.
//
// The package has two layers. The pure one (this file, discover.go,
// errors.go) holds the ABI constants, the mapping from gccl's types and
// reductions to NCCL's, library discovery and error translation; it is
// tested on any machine. The loaded one (lib_linux.go) resolves the
// symbols and wraps each call, checking every return code.
//
// Handles (communicators, streams, events, graphs) and device pointers are
// opaque uintptrs: Go never dereferences them.
package nccl

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gccl/gccl/lib/reduce"
)

// UniqueIDBytes is NCCL_UNIQUE_ID_BYTES.
const UniqueIDBytes = 128

// UniqueID is ncclUniqueId: 128 opaque bytes, passed by value to
// ncclCommInitRank (purego v0.11 lays a struct over 64 bytes on the stack
// as the System V ABI wants).
type UniqueID struct{ Internal [UniqueIDBytes]byte }

// ncclDataType_t values (nccl.h).
const (
	ncclInt8     = 0
	ncclUint8    = 1
	ncclInt32    = 2
	ncclUint32   = 3
	ncclInt64    = 4
	ncclUint64   = 5
	ncclFloat16  = 6
	ncclFloat32  = 7
	ncclFloat64  = 8
	ncclBfloat16 = 9
)

// ncclRedOp_t values (nccl.h); PreMulSum is created per communicator.
const (
	ncclSum  = 0
	ncclProd = 1
	ncclMax  = 2
	ncclMin  = 3
	ncclAvg  = 4
)

// ncclScalarHostImmediate: ncclRedOpCreatePreMulSum reads the scalar from
// host memory at the call.
const ncclScalarHostImmediate = 1

// CUDA runtime enums used here (driver_types.h).
const (
	cudaMemcpyHostToDevice           = 1
	cudaMemcpyDeviceToHost           = 2
	cudaStreamNonBlocking            = 1
	cudaStreamCaptureModeThreadLocal = 1
)

// NCCL_WIN_COLL_SYMMETRIC: a window registered for symmetric kernels (-R 2).
const ncclWinCollSymmetric = 1

// DataType maps a gccl data type to ncclDataType_t.
func DataType(t reduce.DataType) (int32, error) {
	switch t {
	case reduce.Int8:
		return ncclInt8, nil
	case reduce.Uint8:
		return ncclUint8, nil
	case reduce.Int32:
		return ncclInt32, nil
	case reduce.Uint32:
		return ncclUint32, nil
	case reduce.Int64:
		return ncclInt64, nil
	case reduce.Uint64:
		return ncclUint64, nil
	case reduce.Float16:
		return ncclFloat16, nil
	case reduce.Float32:
		return ncclFloat32, nil
	case reduce.Float64:
		return ncclFloat64, nil
	case reduce.Bfloat16:
		return ncclBfloat16, nil
	}
	return 0, fmt.Errorf("nccl: data type %v has no NCCL equivalent", t)
}

// RedOp maps a built-in gccl reduction to ncclRedOp_t. PreMulSum has no
// fixed value: it is created per communicator and scalar (Comm.PreMulSum).
func RedOp(op reduce.Op) (int32, error) {
	switch op {
	case reduce.Sum:
		return ncclSum, nil
	case reduce.Prod:
		return ncclProd, nil
	case reduce.Max:
		return ncclMax, nil
	case reduce.Min:
		return ncclMin, nil
	case reduce.Avg:
		return ncclAvg, nil
	}
	return 0, fmt.Errorf("nccl: reduction %v is not a built-in NCCL operation", op)
}

// VersionString turns NCCL_VERSION_CODE into "2.28.9": codes from 2.9 on
// are X*10000+Y*100+Z, earlier ones X*1000+Y*100+Z.
func VersionString(code int) string {
	if code >= 10000 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
}

// CUDAVersionString turns CUDART_VERSION (1000*major + 10*minor) into
// "13.0".
func CUDAVersionString(code int) string {
	return fmt.Sprintf("%d.%d", code/1000, code%1000/10)
}

// configUndef is NCCL_CONFIG_UNDEF_INT (INT_MIN).
const configUndef = -1 << 31

// configMagic is NCCL_API_MAGIC.
const configMagic = 0xcafebeef

// config is the leading part of ncclConfig_t that every NCCL since 2.17
// reads: a config names its version and size, and NCCL reads only the
// fields that version had, so this prefix works on later releases too.
type config struct {
	size           uint64
	magic          uint32
	version        uint32
	blocking       int32
	cgaClusterSize int32
	minCTAs        int32
	maxCTAs        int32
	netName        uintptr
}

// configVersion is the NCCL release whose ncclConfig_t config lays out.
const configVersion = 21700

// newConfig is NCCL_CONFIG_INITIALIZER for config's version, blocking,
// with minCTAs = maxCTAs = channels when channels > 0 (NCCL runs a channel
// per CTA).
func newConfig(channels int) config {
	c := config{size: 40, magic: configMagic, version: configVersion,
		blocking: 1, cgaClusterSize: configUndef, minCTAs: configUndef, maxCTAs: configUndef}
	if channels > 0 {
		c.minCTAs, c.maxCTAs = int32(channels), int32(channels)
	}
	return c
}

// ScalarBytes encodes v as one element of t, little-endian, as
// ncclRedOpCreatePreMulSum reads its host scalar.
func ScalarBytes(t reduce.DataType, v float64) ([]byte, error) {
	b := make([]byte, t.Size())
	switch t {
	case reduce.Int8:
		b[0] = byte(int8(v))
	case reduce.Uint8:
		b[0] = uint8(v)
	case reduce.Int32:
		binary.LittleEndian.PutUint32(b, uint32(int32(v)))
	case reduce.Uint32:
		binary.LittleEndian.PutUint32(b, uint32(v))
	case reduce.Int64:
		binary.LittleEndian.PutUint64(b, uint64(int64(v)))
	case reduce.Uint64:
		binary.LittleEndian.PutUint64(b, uint64(v))
	case reduce.Float16:
		binary.LittleEndian.PutUint16(b, reduce.F16FromFloat64(v))
	case reduce.Bfloat16:
		binary.LittleEndian.PutUint16(b, reduce.BF16FromFloat64(v))
	case reduce.Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case reduce.Float64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	default:
		return nil, fmt.Errorf("nccl: data type %v has no NCCL equivalent", t)
	}
	return b, nil
}
