package nccl

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/gccl/gccl/lib/reduce"
)

// TestDataType pins every gccl type to the ncclDataType_t value of nccl.h:
// the value travels to NCCL as a bare integer, so a shifted constant
// would silently reduce the wrong element type.
func TestDataType(t *testing.T) {
	want := map[reduce.DataType]int32{
		reduce.Int8:     0, // ncclInt8
		reduce.Uint8:    1, // ncclUint8
		reduce.Int32:    2, // ncclInt32
		reduce.Uint32:   3, // ncclUint32
		reduce.Int64:    4, // ncclInt64
		reduce.Uint64:   5, // ncclUint64
		reduce.Float16:  6, // ncclFloat16
		reduce.Float32:  7, // ncclFloat32
		reduce.Float64:  8, // ncclFloat64
		reduce.Bfloat16: 9, // ncclBfloat16
	}
	all := reduce.AllDataTypes()
	if len(all) != len(want) {
		t.Fatalf("reduce.AllDataTypes() has %d types, the table %d: map the new type to NCCL", len(all), len(want))
	}
	seen := map[int32]reduce.DataType{}
	for _, dt := range all {
		got, err := DataType(dt)
		if err != nil {
			t.Errorf("DataType(%v): %v", dt, err)
			continue
		}
		w, ok := want[dt]
		if !ok {
			t.Errorf("DataType(%v) = %d, but the test has no expected value", dt, got)
		} else if got != w {
			t.Errorf("DataType(%v) = %d, want %d", dt, got, w)
		}
		// Two gccl types on one NCCL value would alias them.
		if prev, dup := seen[got]; dup {
			t.Errorf("DataType(%v) = DataType(%v) = %d", dt, prev, got)
		}
		seen[got] = dt
	}
}

// TestDataTypeInvalid: a type outside the enum must be refused, not
// mapped to 0 (ncclInt8) with a nil error.
func TestDataTypeInvalid(t *testing.T) {
	for _, dt := range []reduce.DataType{-1, reduce.DataType(reduce.NumDataTypes), 99} {
		got, err := DataType(dt)
		if err == nil {
			t.Errorf("DataType(%d) = %d, nil; want an error", int(dt), got)
			continue
		}
		if !strings.Contains(err.Error(), dt.String()) {
			t.Errorf("DataType(%d) error %q does not name the type %q", int(dt), err, dt.String())
		}
	}
}

// TestRedOp pins the built-in reductions to ncclRedOp_t.
func TestRedOp(t *testing.T) {
	tests := []struct {
		op   reduce.Op
		want int32
	}{
		{reduce.Sum, 0},  // ncclSum
		{reduce.Prod, 1}, // ncclProd
		{reduce.Max, 2},  // ncclMax
		{reduce.Min, 3},  // ncclMin
		{reduce.Avg, 4},  // ncclAvg
	}
	for _, tt := range tests {
		got, err := RedOp(tt.op)
		if err != nil || got != tt.want {
			t.Errorf("RedOp(%v) = %d, %v; want %d, nil", tt.op, got, err, tt.want)
		}
	}
}

// TestRedOpRefused: PreMulSum has no fixed ncclRedOp_t (it is created per
// communicator), and an unknown op has none at all; both must error so a
// caller never sends ncclSum in their place.
func TestRedOpRefused(t *testing.T) {
	for _, op := range []reduce.Op{reduce.PreMulSum, reduce.Op(reduce.NumOps), -1} {
		got, err := RedOp(op)
		if err == nil {
			t.Errorf("RedOp(%v) = %d, nil; want an error", op, got)
			continue
		}
		if !strings.Contains(err.Error(), op.String()) {
			t.Errorf("RedOp(%v) error %q does not name the op", op, err)
		}
	}
}

// TestVersionString covers both NCCL_VERSION_CODE encodings: X*10000+Y*100+Z
// from 2.9 on, X*1000+Y*100+Z before.
func TestVersionString(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{
		{22803, "2.28.3"},
		{21903, "2.19.3"},
		{22809, "2.28.9"},
		{20900, "2.9.0"}, // first release of the new encoding
		{2708, "2.7.8"},  // old encoding
		{2804, "2.8.4"},  // last release of the old encoding
	}
	for _, tt := range tests {
		if got := VersionString(tt.code); got != tt.want {
			t.Errorf("VersionString(%d) = %q, want %q", tt.code, got, tt.want)
		}
	}
}

// TestCUDAVersionString: CUDART_VERSION is 1000*major + 10*minor.
func TestCUDAVersionString(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{
		{13000, "13.0"},
		{12080, "12.8"},
		{12040, "12.4"},
		{11080, "11.8"},
	}
	for _, tt := range tests {
		if got := CUDAVersionString(tt.code); got != tt.want {
			t.Errorf("CUDAVersionString(%d) = %q, want %q", tt.code, got, tt.want)
		}
	}
}

// TestScalarBytes decodes what ScalarBytes encodes, type by type: NCCL
// reads the PreMulSum scalar as one raw little-endian element of the
// buffer's type, so a wrong width or encoding scales by garbage.
func TestScalarBytes(t *testing.T) {
	le := binary.LittleEndian
	tests := []struct {
		dt     reduce.DataType
		v      float64
		decode func([]byte) float64
		raw    []byte // the exact encoding, where it is worth pinning
	}{
		{reduce.Int8, 2, func(b []byte) float64 { return float64(int8(b[0])) }, []byte{2}},
		{reduce.Int8, -3, func(b []byte) float64 { return float64(int8(b[0])) }, []byte{0xfd}},
		{reduce.Uint8, 2, func(b []byte) float64 { return float64(b[0]) }, []byte{2}},
		{reduce.Int32, 2, func(b []byte) float64 { return float64(int32(le.Uint32(b))) }, []byte{2, 0, 0, 0}},
		{reduce.Int32, -3, func(b []byte) float64 { return float64(int32(le.Uint32(b))) }, []byte{0xfd, 0xff, 0xff, 0xff}},
		{reduce.Uint32, 2, func(b []byte) float64 { return float64(le.Uint32(b)) }, []byte{2, 0, 0, 0}},
		{reduce.Int64, 2, func(b []byte) float64 { return float64(int64(le.Uint64(b))) }, []byte{2, 0, 0, 0, 0, 0, 0, 0}},
		{reduce.Int64, -3, func(b []byte) float64 { return float64(int64(le.Uint64(b))) }, nil},
		{reduce.Uint64, 2, func(b []byte) float64 { return float64(le.Uint64(b)) }, []byte{2, 0, 0, 0, 0, 0, 0, 0}},
		// 0.5 is exact in every float type: F16 0x3800, BF16 0x3F00.
		{reduce.Float16, 0.5, func(b []byte) float64 { return float64(reduce.F16ToFloat32(le.Uint16(b))) }, []byte{0x00, 0x38}},
		{reduce.Bfloat16, 0.5, func(b []byte) float64 { return float64(reduce.BF16ToFloat32(le.Uint16(b))) }, []byte{0x00, 0x3f}},
		{reduce.Float32, 0.5, func(b []byte) float64 { return float64(math.Float32frombits(le.Uint32(b))) }, []byte{0, 0, 0, 0x3f}},
		{reduce.Float64, 0.5, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) }, []byte{0, 0, 0, 0, 0, 0, 0xe0, 0x3f}},
		{reduce.Float32, -0.25, func(b []byte) float64 { return float64(math.Float32frombits(le.Uint32(b))) }, nil},
	}
	covered := map[reduce.DataType]bool{}
	for _, tt := range tests {
		covered[tt.dt] = true
		b, err := ScalarBytes(tt.dt, tt.v)
		if err != nil {
			t.Errorf("ScalarBytes(%v, %v): %v", tt.dt, tt.v, err)
			continue
		}
		if len(b) != tt.dt.Size() {
			t.Errorf("ScalarBytes(%v, %v) has %d bytes, want %d", tt.dt, tt.v, len(b), tt.dt.Size())
			continue
		}
		if got := tt.decode(b); got != tt.v {
			t.Errorf("ScalarBytes(%v, %v) = % x, decodes to %v", tt.dt, tt.v, b, got)
		}
		if tt.raw != nil && !bytes.Equal(b, tt.raw) {
			t.Errorf("ScalarBytes(%v, %v) = % x, want % x", tt.dt, tt.v, b, tt.raw)
		}
	}
	// Every type NCCL has must be covered above.
	for _, dt := range reduce.AllDataTypes() {
		if !covered[dt] {
			t.Errorf("ScalarBytes is not tested for %v", dt)
		}
	}
}

// TestScalarBytesInvalid: a type outside the enum is refused rather than
// encoded as an empty scalar NCCL would read past.
func TestScalarBytesInvalid(t *testing.T) {
	for _, dt := range []reduce.DataType{-1, reduce.DataType(reduce.NumDataTypes)} {
		if b, err := ScalarBytes(dt, 1); err == nil {
			t.Errorf("ScalarBytes(%d, 1) = % x, nil; want an error", int(dt), b)
		}
	}
}

// TestConfigLayout checks config against the C layout of ncclConfig_t's
// first fields (NCCL 2.17) on 64-bit Linux: NCCL reads the struct through a
// pointer, so a misplaced field sets the wrong option.
func TestConfigLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is pinned for 64-bit platforms")
	}
	var c config
	tests := []struct {
		field     string
		got, want uintptr
	}{
		{"Sizeof(config)", unsafe.Sizeof(c), 40},
		{"size", unsafe.Offsetof(c.size), 0},
		{"magic", unsafe.Offsetof(c.magic), 8},
		{"version", unsafe.Offsetof(c.version), 12},
		{"blocking", unsafe.Offsetof(c.blocking), 16},
		{"cgaClusterSize", unsafe.Offsetof(c.cgaClusterSize), 20},
		{"minCTAs", unsafe.Offsetof(c.minCTAs), 24},
		{"maxCTAs", unsafe.Offsetof(c.maxCTAs), 28},
		{"netName", unsafe.Offsetof(c.netName), 32},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.field, tt.got, tt.want)
		}
	}
}

// TestNewConfig checks NCCL_CONFIG_INITIALIZER's values: NCCL rejects a
// config whose magic, version or size is off, and treats INT_MIN as "not
// set" for the CTA bounds.
func TestNewConfig(t *testing.T) {
	tests := []struct {
		channels int
		wantCTAs int32
	}{
		{0, math.MinInt32},  // NCCL picks
		{-1, math.MinInt32}, // a negative count is no request either
		{1, 1},              // one CTA is a request too
		{4, 4},
		{32, 32},
	}
	for _, tt := range tests {
		c := newConfig(tt.channels)
		if c.size != uint64(unsafe.Sizeof(config{})) || c.size != 40 {
			t.Errorf("newConfig(%d).size = %d, want 40 (= Sizeof(config))", tt.channels, c.size)
		}
		if c.magic != 0xcafebeef {
			t.Errorf("newConfig(%d).magic = %#x, want 0xcafebeef", tt.channels, c.magic)
		}
		if c.version != 21700 {
			t.Errorf("newConfig(%d).version = %d, want 21700", tt.channels, c.version)
		}
		if c.blocking != 1 {
			t.Errorf("newConfig(%d).blocking = %d, want 1", tt.channels, c.blocking)
		}
		if c.cgaClusterSize != math.MinInt32 {
			t.Errorf("newConfig(%d).cgaClusterSize = %d, want INT_MIN", tt.channels, c.cgaClusterSize)
		}
		if c.minCTAs != tt.wantCTAs || c.maxCTAs != tt.wantCTAs {
			t.Errorf("newConfig(%d) CTAs = [%d, %d], want [%d, %d]", tt.channels, c.minCTAs, c.maxCTAs, tt.wantCTAs, tt.wantCTAs)
		}
		if c.netName != 0 {
			t.Errorf("newConfig(%d).netName = %#x, want NULL", tt.channels, c.netName)
		}
	}
}

// TestUniqueIDSize: ncclUniqueId goes by value to ncclCommInitRankConfig,
// so its Go size must be NCCL_UNIQUE_ID_BYTES exactly.
func TestUniqueIDSize(t *testing.T) {
	if got := unsafe.Sizeof(UniqueID{}); got != 128 || UniqueIDBytes != 128 {
		t.Errorf("Sizeof(UniqueID) = %d, UniqueIDBytes = %d; want 128", got, UniqueIDBytes)
	}
}
