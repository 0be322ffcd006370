package prims

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/gccl/gccl/lib/algo"
	"github.com/gccl/gccl/lib/reduce"
)

// twoPasses is compute as two whole passes: the reference the blocked,
// fused compute must match byte for byte.
func twoPasses(p *Prims, prim algo.Prim, rbuf, in, out, sbuf []byte, post bool) {
	switch {
	case prim.Reduces():
		dst := out
		if dst == nil {
			dst = sbuf
		}
		p.Kernel.Reduce(dst, rbuf, in, post)
		if out != nil && sbuf != nil {
			copy(sbuf, dst)
		}
	case prim.Recvs():
		copy(out, rbuf)
		copy(sbuf, rbuf)
	case prim == algo.CopySend:
		CopyUnlessSame(out, in)
		copy(sbuf, in)
	default:
		p.Kernel.Pre(sbuf, in)
	}
}

// TestComputeMatchesTwoPasses checks every primitive's compute, fused in
// blocks, against two plain passes: lengths around the block size, odd
// lengths, in place, with and without the post-op.
func TestComputeMatchesTwoPasses(t *testing.T) {
	k, err := reduce.NewKernel(reduce.Float32, reduce.Avg, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	prims := []algo.Prim{algo.Send, algo.Recv, algo.RecvReduceSend, algo.RecvCopySend, algo.RecvReduceCopySend, algo.CopySend, algo.RecvReduceCopy}
	for _, n := range []int{0, 4, 4 * 37, fuseBlock - 4, fuseBlock, fuseBlock + 4, 3*fuseBlock + 12, 256 << 10} {
		for _, prim := range prims {
			for _, inPlace := range []bool{false, true} {
				for _, post := range []bool{false, true} {
					for _, direct := range []bool{false, true} {
						if direct && (!prim.Sends() || !prim.WritesOutput()) {
							continue // only these run with no send slot (posted by reference)
						}
						t.Run(fmt.Sprintf("%s/%d/inplace=%v/post=%v/direct=%v", prim, n, inPlace, post, direct), func(t *testing.T) {
							got, want := computeCase(k, prim, n, inPlace), computeCase(k, prim, n, inPlace)
							if direct {
								got.sbuf, want.sbuf = nil, nil
							}
							p := &Prims{Kernel: k, Elt: 4}
							p.compute(prim, got.rbuf, got.in, got.out, got.sbuf, post)
							twoPasses(p, prim, want.rbuf, want.in, want.out, want.sbuf, post)
							if !bytes.Equal(got.out, want.out) || !bytes.Equal(got.sbuf, want.sbuf) || !bytes.Equal(got.in, want.in) {
								t.Fatal("fused compute differs from two passes")
							}
						})
					}
				}
			}
		}
	}
}

type computeBufs struct{ rbuf, in, out, sbuf []byte }

// computeCase builds the buffers prim touches, n bytes each, with float32
// values that every order of operations rounds alike (small integers).
func computeCase(k *reduce.Kernel, prim algo.Prim, n int, inPlace bool) computeBufs {
	fill := func(seed int) []byte {
		b := make([]byte, n)
		for i := 0; i+4 <= n; i += 4 {
			v := float32((i/4*7 + seed) % 64)
			copy(b[i:], f32bytes(v))
		}
		return b
	}
	var c computeBufs
	if prim.Recvs() {
		c.rbuf = fill(1)
	}
	if prim.ReadsInput() {
		c.in = fill(2)
	}
	if prim.WritesOutput() {
		c.out = fill(3)
		if inPlace && c.in != nil {
			c.out = c.in
		}
	}
	if prim.Sends() {
		c.sbuf = fill(4)
	}
	return c
}

func f32bytes(v float32) []byte {
	return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))
}

// BenchmarkCompute times recvReduceCopySend and recvCopySend on one Simple
// slice (256 KiB), fused in blocks against two whole passes, with a copy()
// of the same bytes beside them.
func BenchmarkCompute(b *testing.B) {
	k, err := reduce.NewKernel(reduce.Float32, reduce.Sum, 0, 2)
	if err != nil {
		b.Fatal(err)
	}
	const n = 256 << 10
	for _, prim := range []algo.Prim{algo.RecvReduceCopySend, algo.RecvCopySend} {
		c := computeCase(k, prim, n, false)
		p := &Prims{Kernel: k, Elt: 4}
		b.Run(prim.String()+"/fused", func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				p.compute(prim, c.rbuf, c.in, c.out, c.sbuf, false)
			}
		})
		b.Run(prim.String()+"/two-passes", func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				twoPasses(p, prim, c.rbuf, c.in, c.out, c.sbuf, false)
			}
		})
	}
	src, dst := make([]byte, n), make([]byte, n)
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			copy(dst, src)
		}
	})
}
