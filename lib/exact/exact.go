// Package exact builds test data whose collective results are known exactly,
// whatever the order in which ranks and chunks are combined, and compares
// results bit for bit.
//
// For reductions, Fill gives every rank values from ranges chosen per (type,
// op) so that reducing up to MaxRanks of them is exact in any order and any
// tree shape, in the element type's own arithmetic (float16 and bfloat16
// rounded after every operation, integers wrapping): see baseValue for the
// ranges. Expected then gives the single correct answer, with one rounding
// only where the operation itself rounds (the final division of Avg). For
// the other collectives FillPlain gives pseudo-random data, unique enough per
// (seed, rank, index) that a misplaced block is detected.
//
// Buffers hold elements in the machine's native byte order. float16 is IEEE
// binary16 and bfloat16 the top 16 bits of an IEEE binary32. All functions
// are safe for concurrent use; the tables behind Fill and Expected are built
// once per (type, op, seed[, nRanks]) and cached.
package exact

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/gccl/gccl/lib/reduce"
)

var ne = binary.NativeEndian

// Fill writes count elements of rank's input into buf (len >= count*t.Size()),
// element j holding the value for global index first+j. Values depend only on
// (t, op, seed, rank, index) and reduce exactly, in any order, over ranks
// 0..nRanks-1 for nRanks <= MaxRanks. Fill panics on an invalid type or op, on
// nRanks outside [1, MaxRanks] or rank outside [0, nRanks), and on a short
// buffer.
func Fill(buf []byte, t reduce.DataType, op reduce.Op, seed uint64, rank, nRanks int, first, count int) {
	checkArgs(buf, t, op, nRanks, first, count)
	if rank < 0 || rank >= nRanks {
		panic(fmt.Sprintf("exact: rank %d outside [0, %d)", rank, nRanks))
	}
	ft := getFillTable(t, op, seed)
	storeSlots(buf, t.Size(), ft.vals, ft.key, ft.mask, rank, first, count)
}

// Expected writes into buf (len >= count*t.Size()) the reduction with op over
// ranks 0..nRanks-1 of the Fill values at global indices first..first+count-1.
// Sum, Prod, Max and Min are the usual ones; PreMulSum is the sum over ranks
// of x*Scalar(t); Avg is the sum divided by nRanks once at the end: Go's
// truncating division for integers, one correctly rounded (nearest, ties to
// even) division in the element type for floats. Integer arithmetic wraps as
// Go's does. Expected panics like Fill.
func Expected(buf []byte, t reduce.DataType, op reduce.Op, seed uint64, nRanks int, first, count int) {
	checkArgs(buf, t, op, nRanks, first, count)
	ft := getFillTable(t, op, seed)
	// The table of all slots costs len(ft.vals)*nRanks steps once; a short
	// range is cheaper reduced directly.
	if et := getExpTable(ft, seed, nRanks, count >= len(ft.vals)/2); et != nil {
		storeSlots(buf, t.Size(), et.vals, ft.key, ft.mask, 0, first, count)
		return
	}
	for j := range count {
		store(buf, j, t.Size(), ft.reduce(slotOf(ft.key, ft.mask, first+j), nRanks))
	}
}

// Scalar is the PreMulSum scalar that Fill's data are built for: 2 for
// integer types (wrapping products are exact), 0.5 for float types (halving
// the small integers Fill uses is exact, and their sums stay exact).
func Scalar(t reduce.DataType) float64 {
	if t.IsFloat() {
		return 0.5
	}
	return 2
}

// FillPlain writes count elements of pseudo-random data for (seed, rank,
// first+j) into buf, for collectives that move data without reducing it. The
// values are finite for float types (any bit pattern but Inf and NaN, so
// subnormals and -0 occur). The expected output of a block is FillPlain of
// the rank and indices it came from.
func FillPlain(buf []byte, t reduce.DataType, seed uint64, rank int, first, count int) {
	if !t.Valid() {
		panic(fmt.Sprintf("exact: invalid data type %v", t))
	}
	checkLen(buf, t, first, count)
	key := mix64(seed ^ 0x91a1 + mix64(uint64(rank)^0x7a11c0de))
	// Any bit pattern, except that an all-ones exponent (Inf, NaN) loses its
	// top exponent bit.
	var expMask, flip uint64
	switch t {
	case reduce.Float16:
		expMask, flip = 0x7c00, 0x4000
	case reduce.Bfloat16:
		expMask, flip = 0x7f80, 0x4000
	case reduce.Float32:
		expMask, flip = 0x7f800000, 0x40000000
	case reduce.Float64:
		expMask, flip = 0x7ff0000000000000, 0x4000000000000000
	}
	size := t.Size()
	var vals [chunk]uint64
	for done := 0; done < count; done += chunk {
		n := min(chunk, count-done)
		plainValues(vals[:n], key, size, first+done)
		if expMask != 0 {
			for j, v := range vals[:n] {
				if v&expMask == expMask {
					vals[j] = v ^ flip
				}
			}
		}
		switch size {
		case 1:
			b := buf[done : done+n]
			for j, v := range vals[:n] {
				b[j] = byte(v)
			}
		case 2:
			b := buf[2*done : 2*(done+n)]
			for j, v := range vals[:n] {
				ne.PutUint16(b[2*j:], uint16(v))
			}
		case 4:
			b := buf[4*done : 4*(done+n)]
			for j, v := range vals[:n] {
				ne.PutUint32(b[4*j:], uint32(v))
			}
		case 8:
			b := buf[8*done : 8*(done+n)]
			for j, v := range vals[:n] {
				ne.PutUint64(b[8*j:], v)
			}
		}
	}
}

// plainValues sets out[j] to the raw bits (the low 8*size bits count) of
// index first+j: the 8/size indices of a group share one hash.
func plainValues(out []uint64, key uint64, size, first int) {
	per := 8 / size
	w := uint(8 * size)
	at := func(i int) uint64 { return mix64(key+uint64(i/per)*golden) >> (w * uint(i%per)) }
	k := 0
	for ; k < len(out) && (first+k)%per != 0; k++ {
		out[k] = at(first + k)
	}
	g := uint64((first + k) / per)
	for ; k+per <= len(out); k += per {
		h := mix64(key + g*golden)
		o := out[k : k+per]
		for lane := range o {
			o[lane] = h
			h >>= w & 63
		}
		g++
	}
	for ; k < len(out); k++ {
		out[k] = at(first + k)
	}
}

// Compare compares the elements of got and want of type t. With ulps == 0 an
// element matches only if its bits are identical. With ulps > 0, float
// elements match when they are at most ulps units in the last place apart
// (+0 and -0 are equal, NaN matches only NaN, Inf is one unit past the
// largest finite value) and integer elements still need identical bits.
// Only whole elements are compared; when the lengths differ, each element
// present in only one of the buffers counts as wrong. Compare returns the
// number of wrong elements and the index of the first one, -1 if none.
func Compare(got, want []byte, t reduce.DataType, ulps int) (wrong int, first int) {
	size := t.Size()
	if size == 0 {
		panic(fmt.Sprintf("exact: invalid data type %v", t))
	}
	ng, nw := len(got)/size, len(want)/size
	n := min(ng, nw)
	first = -1
	if bytes.Equal(got[:n*size], want[:n*size]) {
		// Nothing to count.
	} else if ulps > 0 && t.IsFloat() {
		for i := range n {
			if !withinULPs(load(got, i, size), load(want, i, size), t, uint64(ulps)) {
				wrong++
				if first < 0 {
					first = i
				}
			}
		}
	} else {
		for i := range n {
			if load(got, i, size) != load(want, i, size) {
				wrong++
				if first < 0 {
					first = i
				}
			}
		}
	}
	if ng != nw {
		if first < 0 {
			first = n
		}
		wrong += max(ng, nw) - n
	}
	return wrong, first
}

// withinULPs reports whether a and b, bits of the float type t, are at most
// ulps units in the last place apart.
func withinULPs(a, b uint64, t reduce.DataType, ulps uint64) bool {
	if a == b {
		return true
	}
	var sign, exp uint64
	switch t {
	case reduce.Float16:
		sign, exp = 0x8000, 0x7c00
	case reduce.Bfloat16:
		sign, exp = 0x8000, 0x7f80
	case reduce.Float32:
		sign, exp = 0x80000000, 0x7f800000
	default:
		sign, exp = 0x8000000000000000, 0x7ff0000000000000
	}
	nanA := a&exp == exp && a&^(sign|exp) != 0
	nanB := b&exp == exp && b&^(sign|exp) != 0
	if nanA || nanB {
		return nanA && nanB
	}
	ma, mb := a&^sign, b&^sign
	var d uint64
	if a&sign == b&sign {
		d = max(ma, mb) - min(ma, mb)
	} else {
		d = ma + mb // through zero; +0 and -0 are 0 apart
	}
	return d <= ulps
}

func load(b []byte, i, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[i])
	case 2:
		return uint64(ne.Uint16(b[2*i:]))
	case 4:
		return uint64(ne.Uint32(b[4*i:]))
	}
	return ne.Uint64(b[8*i:])
}

func store(b []byte, i, size int, v uint64) {
	switch size {
	case 1:
		b[i] = byte(v)
	case 2:
		ne.PutUint16(b[2*i:], uint16(v))
	case 4:
		ne.PutUint32(b[4*i:], uint32(v))
	default:
		ne.PutUint64(b[8*i:], v)
	}
}

func checkArgs(buf []byte, t reduce.DataType, op reduce.Op, nRanks, first, count int) {
	if !t.Valid() {
		panic(fmt.Sprintf("exact: invalid data type %v", t))
	}
	if !op.Valid() {
		panic(fmt.Sprintf("exact: invalid op %v", op))
	}
	if nRanks < 1 || nRanks > MaxRanks {
		panic(fmt.Sprintf("exact: nRanks %d outside [1, %d]", nRanks, MaxRanks))
	}
	checkLen(buf, t, first, count)
}

func checkLen(buf []byte, t reduce.DataType, first, count int) {
	if count < 0 || first < 0 {
		panic(fmt.Sprintf("exact: negative first %d or count %d", first, count))
	}
	if len(buf)/t.Size() < count {
		panic(fmt.Sprintf("exact: buffer of %d bytes too short for %d %v elements", len(buf), count, t))
	}
}

// chunk is the number of elements whose table indices or values are
// computed before they are stored.
const chunk = 512

// storeSlots writes, for j < count, tab[rankSlot(slotOf(key, mask, first+j), r)]
// into element j of buf.
func storeSlots(buf []byte, size int, tab []uint64, key, mask uint64, r, first, count int) {
	tab = tab[:mask+1]
	var idx [chunk]uint32
	for done := 0; done < count; done += chunk {
		n := min(chunk, count-done)
		tabIndices(idx[:n], key, mask, r, first+done)
		switch size {
		case 1:
			b := buf[done : done+n]
			for j, s := range idx[:n] {
				b[j] = byte(tab[s])
			}
		case 2:
			b := buf[2*done : 2*(done+n)]
			for j, s := range idx[:n] {
				ne.PutUint16(b[2*j:], uint16(tab[s]))
			}
		case 4:
			b := buf[4*done : 4*(done+n)]
			for j, s := range idx[:n] {
				ne.PutUint32(b[4*j:], uint32(tab[s]))
			}
		case 8:
			b := buf[8*done : 8*(done+n)]
			for j, s := range idx[:n] {
				ne.PutUint64(b[8*j:], tab[s])
			}
		}
	}
}

// tabIndices sets out[j] = rankSlot(slotOf(key, mask, first+j), r).
func tabIndices(out []uint32, key, mask uint64, r, first int) {
	ru := uint64(r)
	at := func(s uint64) uint32 { return uint32(s&^keyMask | (s+ru)&keyMask) }
	k := 0
	for ; k < len(out) && (first+k)&3 != 0; k++ {
		out[k] = at(slotOf(key, mask, first+k))
	}
	g := uint64(first+k) >> 2
	for ; k+4 <= len(out); k += 4 {
		h := mix64(key + g*golden)
		o := out[k : k+4]
		o[0] = at(h & mask)
		o[1] = at(h >> 16 & mask)
		o[2] = at(h >> 32 & mask)
		o[3] = at(h >> 48 & mask)
		g++
	}
	for ; k < len(out); k++ {
		out[k] = at(slotOf(key, mask, first+k))
	}
}
