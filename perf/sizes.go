package perf

import "math"

// sizeList is nccl-tests' size sweep: from min to max, multiplying by
// factor when factor > 1, else adding step. A sweep from 0 by a factor goes
// 0, 1, factor, ... (nccl-tests would loop forever). A next size that
// would overflow int64 is past max, so the sweep ends there.
func sizeList(min, max, step, factor int64) []int64 {
	var out []int64
	for s := min; s <= max; {
		out = append(out, s)
		switch {
		case factor > 1:
			if s > math.MaxInt64/factor {
				return out
			}
			s = maxInt64(1, s*factor)
		case step > 0:
			if s > math.MaxInt64-step {
				return out
			}
			s += step
		default:
			return out
		}
		if len(out) > 1<<16 {
			return out // a pathological sweep; validated callers never get here
		}
	}
	return out
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
