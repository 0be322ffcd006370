package ccl

import "os"

// Experiment knobs for one measurement on the 64-core host (issue 41);
// removed once it has picked the design. Read once at start.
var (
	xSlots   = os.Getenv("GCCL_X_SLOTS") == "1"
	xReserve = os.Getenv("GCCL_X_RESERVE") == "1"
	xPark    = os.Getenv("GCCL_X_PARK") == "1"
)
