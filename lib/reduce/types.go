// Package reduce holds the element types, the reduction operators and the
// typed reduction kernels of the stack. A Kernel is resolved once per
// operation; its loops are typed, with no per-element interface calls.
package reduce

import (
	"fmt"
	"strings"
)

// DataType is the element type of a buffer. The order follows ncclDataType_t
// where NCCL has the type.
type DataType int

const (
	Int8 DataType = iota
	Uint8
	Int32
	Uint32
	Int64
	Uint64
	Float16
	Float32
	Float64
	Bfloat16
	numDataTypes
)

// NumDataTypes and NumOps size tables indexed by type or operator.
const (
	NumDataTypes = int(numDataTypes)
	NumOps       = int(numOps)
)

var dataTypeNames = [numDataTypes]string{
	Int8: "int8", Uint8: "uint8", Int32: "int32", Uint32: "uint32",
	Int64: "int64", Uint64: "uint64", Float16: "half", Float32: "float",
	Float64: "double", Bfloat16: "bfloat16",
}

// dataTypeAliases maps every accepted spelling (nccl-tests' and Go's) to a type.
var dataTypeAliases = map[string]DataType{
	"int8": Int8, "char": Int8,
	"uint8": Uint8,
	"int32": Int32, "int": Int32,
	"uint32": Uint32,
	"int64":  Int64,
	"uint64": Uint64,
	"half":   Float16, "float16": Float16, "fp16": Float16,
	"float": Float32, "float32": Float32, "fp32": Float32,
	"double": Float64, "float64": Float64, "fp64": Float64,
	"bfloat16": Bfloat16, "bf16": Bfloat16,
}

// AllDataTypes lists every type in declaration order.
func AllDataTypes() []DataType {
	out := make([]DataType, numDataTypes)
	for i := range out {
		out[i] = DataType(i)
	}
	return out
}

// Valid reports whether t is a known type.
func (t DataType) Valid() bool { return t >= 0 && t < numDataTypes }

// Size is the size of one element in bytes.
func (t DataType) Size() int {
	switch t {
	case Int8, Uint8:
		return 1
	case Float16, Bfloat16:
		return 2
	case Int32, Uint32, Float32:
		return 4
	case Int64, Uint64, Float64:
		return 8
	}
	return 0
}

// IsFloat reports whether t is a floating-point type.
func (t DataType) IsFloat() bool {
	return t == Float16 || t == Bfloat16 || t == Float32 || t == Float64
}

// String returns nccl-tests' name for t ("float", "half", "bfloat16", ...).
func (t DataType) String() string {
	if !t.Valid() {
		return fmt.Sprintf("DataType(%d)", int(t))
	}
	return dataTypeNames[t]
}

// ParseDataType accepts nccl-tests' names and the Go-style names.
func ParseDataType(s string) (DataType, error) {
	if t, ok := dataTypeAliases[strings.ToLower(strings.TrimSpace(s))]; ok {
		return t, nil
	}
	return 0, fmt.Errorf("unknown data type %q (valid: %s)", s, strings.Join(dataTypeNames[:], ", "))
}

// Op is a reduction operator. The order follows ncclRedOp_t.
type Op int

const (
	Sum Op = iota
	Prod
	Max
	Min
	Avg
	PreMulSum
	numOps
)

var opNames = [numOps]string{Sum: "sum", Prod: "prod", Max: "max", Min: "min", Avg: "avg", PreMulSum: "premulsum"}

// AllOps lists every operator in declaration order.
func AllOps() []Op {
	out := make([]Op, numOps)
	for i := range out {
		out[i] = Op(i)
	}
	return out
}

// Valid reports whether o is a known operator.
func (o Op) Valid() bool { return o >= 0 && o < numOps }

func (o Op) String() string {
	if !o.Valid() {
		return fmt.Sprintf("Op(%d)", int(o))
	}
	return opNames[o]
}

// ParseOp accepts "sum", "prod", "max", "min", "avg", "premulsum" (any case).
func ParseOp(s string) (Op, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	for i, n := range opNames {
		if l == n {
			return Op(i), nil
		}
	}
	return 0, fmt.Errorf("unknown reduction %q (valid: %s)", s, strings.Join(opNames[:], ", "))
}
