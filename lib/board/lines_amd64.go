//go:build amd64 && !race && !purego

package board

import "golang.org/x/sys/cpu"

// vectorLines: pack and unpack whole 16-byte blocks (two LL lines) with
// AVX2, the rest in Go. Under the race detector the Go loops run (their
// atomic word accesses are what the detector sees).
var vectorLines = cpu.X86.HasAVX2

//go:noescape
func packLines(words *uint64, data *byte, blocks int, flag uint64)

//go:noescape
func unpackLines(data *byte, words *uint64, blocks int, flag uint32) int

// prefetchLines hints n cache lines from p on into this core's cache.
//
//go:noescape
func prefetchLines(p *uint64, n int)
