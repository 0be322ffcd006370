//go:build !linux

package cpuset

// Affinity lists the processors this process may run on: unknown here.
func Affinity() []int { return nil }
