package ci

import "errors"

// Sentinel errors of Compare and the parsers; every one is bad input (the
// gate's exit code 2). Match them with errors.Is.
var (
	// ErrBadThreshold: a --threshold that does not parse, or bands that overlap.
	ErrBadThreshold = errors.New("invalid threshold")
	// ErrBadOption: an unknown metric or normalisation, a bad alpha.
	ErrBadOption = errors.New("invalid option")
	// ErrNoRecords: a side has no record the gate can use.
	ErrNoRecords = errors.New("no usable records")
	// ErrNoCommonKeys: no key is on both sides.
	ErrNoCommonKeys = errors.New("no keys in common")
	// ErrNoReference: --normalize copy, but records lack ref_copy_gbps.
	ErrNoReference = errors.New("no reference copy bandwidth")
	// ErrNoThreshold: a compared size lies in no threshold band and there is no default.
	ErrNoThreshold = errors.New("no threshold for a size")
)

// Exit codes of the gate.
const (
	ExitPass       = 0 // no regression
	ExitRegression = 1 // at least one regression (or, with RequireAll, a key on one side only)
	ExitBadInput   = 2 // unreadable files, no keys in common, mismatched records, bad flags
)
