//go:build !amd64 || purego

package reduce

// No vector loops here: the portable Go loops run everywhere.

var hasVectorLoops = false

func vectorLoops(_ DataType, l loops, _ float64, _ int) loops { return l }
