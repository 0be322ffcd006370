//go:build !amd64 || race || purego

package board

// vectorLines is off: the Go loops pack and unpack every line.
var vectorLines = false

func packLines(words *uint64, data *byte, blocks int, flag uint64) {
	panic("board: packLines without AVX2")
}

func unpackLines(data *byte, words *uint64, blocks int, flag uint32) int {
	panic("board: unpackLines without AVX2")
}

func prefetchLines(p *uint64, n int) {}
