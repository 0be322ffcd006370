// Package proto implements NCCL's three wire protocols over one directed
// connection: Simple, LL and LL128. Each is an 8-slot FIFO (Steps) in memory
// shared by a sender and a receiver, with head credits flowing back.
//
// A protocol knows nothing of algorithms; it moves the bytes of one step (or
// one slice of several steps) from the sender to the receiver. The memory it
// works on is handed out by a transport (lib/transport), so the same code runs
// over in-process memory, shared memory or a proxied network FIFO.
package proto

import (
	"fmt"
	"strings"
)

// Steps is the number of slots of every FIFO (NCCL_STEPS).
const Steps = 8

// Protocol selects a wire format. The order follows NCCL (LL=0, LL128=1, Simple=2).
type Protocol int

const (
	LL Protocol = iota
	LL128
	Simple
	NumProtocols
)

var protoNames = [NumProtocols]string{LL: "LL", LL128: "LL128", Simple: "Simple"}

// All lists every protocol.
func All() []Protocol { return []Protocol{LL, LL128, Simple} }

func (p Protocol) Valid() bool { return p >= 0 && p < NumProtocols }

func (p Protocol) String() string {
	if !p.Valid() {
		return fmt.Sprintf("Protocol(%d)", int(p))
	}
	return protoNames[p]
}

// Parse accepts "LL", "LL128" and "Simple" in any case.
func Parse(s string) (Protocol, error) {
	for i, n := range protoNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Protocol(i), nil
		}
	}
	return 0, fmt.Errorf("unknown protocol %q (valid: LL, LL128, Simple)", s)
}

// Wire-format constants.
const (
	// LLLineBytes is one LL line: {data1 u32, flag1 u32, data2 u32, flag2 u32}.
	LLLineBytes = 16
	// LLDataPerLine is the payload of one LL line (50% efficiency).
	LLDataPerLine = 8
	// LL128LineBytes is one LL128 line: 15 u64 of data, then one u64 flag.
	LL128LineBytes = 128
	// LL128LineWords is the number of u64 words per LL128 line.
	LL128LineWords = LL128LineBytes / 8
	// LL128DataWords is the number of payload words per LL128 line.
	LL128DataWords = LL128LineWords - 1
	// LL128DataPerLine is the payload of one LL128 line (120/128 efficiency).
	LL128DataPerLine = LL128DataWords * 8
)

// Default buffer sizes per protocol: NCCL's, except Simple's.
//
// Simple's is 1 MiB, a quarter of NCCL's: a ring's Simple chunk is 4 steps,
// which with NCCL's 4 MiB is 2 MiB per channel in flight, as much as a core's
// L2 on the project's VM. Measured there, 4 MiB was slower than 1 MiB from
// 1 MiB up, most on 4 ranks; 512 KiB tied with 1 MiB (docs/PERFORMANCE.md,
// "The Simple buffer size"). A GPU's buffers live in HBM at every size;
// NCCL has no such reason.
const (
	DefaultSimpleBuffSize = 1 << 20   // 8 steps of 128 KiB
	NCCLSimpleBuffSize    = 4 << 20   // NCCL's: 8 steps of 512 KiB (GCCL_BUFFSIZE=4M)
	DefaultLLBuffSize     = 512 << 10 // 8 steps of 64 KiB of lines (32 KiB of data)
	DefaultLL128BuffSize  = 4915200   // 8 steps of 4800 lines (576000 B of data)
)

// Grain is the byte granularity chunks are rounded to, per protocol.
func (p Protocol) Grain() int {
	switch p {
	case LL:
		return 16
	case LL128:
		return 16 * LL128DataPerLine // 1920 B: 16 lines
	default:
		return 512
	}
}

// stepQuantum is the unit a step's buffer must be a multiple of.
func (p Protocol) stepQuantum() int {
	switch p {
	case LL:
		return 2 * LLLineBytes // a step carries whole 16-byte grains of payload
	case LL128:
		return 16 * LL128LineBytes // one grain of lines
	default:
		return 512
	}
}

// StepData is how many payload bytes fit in one step of a buffer of
// buffSize bytes.
func (p Protocol) StepData(buffSize int) int {
	step := buffSize / Steps
	switch p {
	case LL:
		return step / LLLineBytes * LLDataPerLine
	case LL128:
		return step / LL128LineBytes * LL128DataPerLine
	default:
		return step
	}
}

// BuffSizes holds the FIFO size in bytes of each protocol.
type BuffSizes [NumProtocols]int

// DefaultBuffSizes returns the default sizes (see DefaultSimpleBuffSize).
func DefaultBuffSizes() BuffSizes {
	return BuffSizes{LL: DefaultLLBuffSize, LL128: DefaultLL128BuffSize, Simple: DefaultSimpleBuffSize}
}

// NCCLBuffSizes returns NCCL's default sizes.
func NCCLBuffSizes() BuffSizes {
	return BuffSizes{LL: DefaultLLBuffSize, LL128: DefaultLL128BuffSize, Simple: NCCLSimpleBuffSize}
}

// MaxBuffSize bounds a FIFO (1 GiB) so that sizes and steps stay small ints.
const MaxBuffSize = 1 << 30

// ValidateBuffSize checks that size can hold 8 steps of whole lines/grains.
func ValidateBuffSize(p Protocol, size int) error {
	q := Steps * p.stepQuantum()
	if size < q || size > MaxBuffSize || size%q != 0 {
		return fmt.Errorf("%s buffer size %d is invalid: it must be a multiple of %d bytes (8 steps x %d) between %d and %d",
			p, size, q, p.stepQuantum(), q, MaxBuffSize)
	}
	return nil
}
