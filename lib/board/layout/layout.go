// Package layout is the geometry of the one-shot and two-shot board
// (lib/board): how much one round carries, in LL lines of what size, and
// from what size a post goes plain. It is pure and a leaf of the stack
// (lib/proto only), so that the cost model (lib/tuning) prices the board
// from the same numbers the board is built with, without importing the
// board's memory code.
package layout

import "github.com/gccl/gccl/lib/proto"

const (
	// RoundBytes is the most payload one round carries per rank; larger
	// operations run in several rounds.
	RoundBytes = 16 << 10
	// LineBytes is the payload of one LL line (two words).
	LineBytes = proto.LLDataPerLine
	// PlainMinBytes is the least round of a post that the stack sends
	// plain (PutPlain) rather than as LL lines: below it LL lines, which
	// arrive with their flags in one miss, are as fast or faster (measured
	// in lib/ccl, plainMinBytes). The cost model prices the two apart.
	PlainMinBytes = 256
)

// TwoShotSegment is the most bytes of one rank's block a two-shot round
// carries on n ranks: the round split n ways, in whole pairs of lines (a
// block then starts on a line, and the lines' vector copy takes it whole).
// 0 when n ranks cannot share a round that way.
func TwoShotSegment(n int) int { return RoundBytes / max(n, 1) / (2 * LineBytes) * (2 * LineBytes) }
