package exact

import (
	"math"
	"sync"

	"github.com/gccl/gccl/lib/reduce"
)

// Construction of the reduction data.
//
// Every global index i is hashed to a slot s (slotOf; 10 or 13 bits) with a
// hash key that depends on (seed, t, op). For float types and all ops but
// Prod, the slot's bits above keyBits are a scale e, giving a factor
// 2^(e-4); the low keyBits bits are a key offset o. Rank r at index i holds
//
//	value(e, (o + r) mod numKeys)
//
// where value(e, k) is a per-(seed, t, op) table of numKeys base values
// (baseValue), scaled by 2^(e-4). The ranks 0..n-1 at one index thus hold a
// window of n consecutive table entries, and the reduction at index i depends
// only on the slot: Expected is a table lookup whatever nRanks is, and Fill
// is a quarter of a hash, one load and one store per element. The ranges of
// the base values bound every window of up to MaxRanks entries so that any
// partial reduction of a window, in any order, is exact.

// MaxRanks is the largest number of ranks for which Fill's data reduce exactly.
const MaxRanks = 64

const (
	keyBits   = 10
	numKeys   = 1 << keyBits // > MaxRanks, so windows of n ranks differ between slots
	keyMask   = numKeys - 1
	scaleBits = 3 // float scales 2^-4 .. 2^3
	golden    = 0x9e3779b97f4a7c15
)

// mix64 is the splitmix64 finalizer (a bijection of uint64).
func mix64(z uint64) uint64 {
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

// streamKey is the hash key of the data for (seed, t, op).
func streamKey(t reduce.DataType, op reduce.Op, seed uint64) uint64 {
	return mix64(seed ^ mix64(uint64(t)<<8|uint64(op)|0x5ca1ab1e<<16))
}

// slotMask is the mask of the slot numbers for (t, op).
func slotMask(t reduce.DataType, op reduce.Op) uint64 {
	if t.IsFloat() && op != reduce.Prod {
		return numKeys<<scaleBits - 1
	}
	return numKeys - 1
}

// slotOf maps a global index to its slot. Four consecutive indices share
// one hash, each taking 16 of its bits.
func slotOf(key, mask uint64, index int) uint64 {
	return mix64(key+uint64(index>>2)*golden) >> (16 * (index & 3)) & mask
}

// rankSlot is the table entry that rank r reads for slot s.
func rankSlot(s uint64, r int) uint64 {
	return s&^keyMask | (s+uint64(r))&keyMask
}

// widthMask is the mask of t's bits in a uint64.
func widthMask(t reduce.DataType) uint64 {
	return ^uint64(0) >> (64 - 8*uint(t.Size()))
}

func isSigned(t reduce.DataType) bool {
	return t == reduce.Int8 || t == reduce.Int32 || t == reduce.Int64
}

// bijW is a bijection of the w-bit integers (w in 8, 11, 32, 64).
func bijW(x uint64, w uint) uint64 {
	switch w {
	case 64:
		return mix64(x)
	case 32:
		x &= 0xffffffff // murmur3 fmix32
		x ^= x >> 16
		x = x * 0x85ebca6b & 0xffffffff
		x ^= x >> 13
		x = x * 0xc2b2ae35 & 0xffffffff
		x ^= x >> 16
		return x
	}
	m := uint64(1)<<w - 1
	x &= m
	x = (x*0x9d + 0x35) & m
	x ^= x >> (w / 2)
	x = x * 0xa7 & m
	x ^= x >> 3
	x = x * 0xd3 & m
	return x
}

// baseValue returns the bits (in t's width) of table entry k (0 <= k <
// numKeys) with scale e (0 <= e < 8, floats only; the factor is 2^(e-4)).
//
// Ranges, for windows of n <= MaxRanks consecutive entries:
//
//   - Sum, Avg, PreMulSum, integers: uniform random bits; sums wrap, which is
//     exact (addition mod 2^w is associative and commutative), and Avg divides
//     the wrapped sum. PreMulSum multiplies by 2 first (also exact mod 2^w).
//   - Prod, integers: random odd values (odd numbers mod 2^w form a group, so
//     products never collapse to 0); wrapping multiplication is exact.
//   - Max, Min, integers: a bijection of k mod 2^w, so the entries of a window
//     are distinct.
//   - Sum, Avg, PreMulSum, floats: integers in [-V, V] times 2^(e-4), where
//     V = 2^(p-6) and p is the precision (float16 11 bits: V=32; bfloat16 8:
//     V=4; float32 24: V=2^18; float64 53: V=2^47). Any partial sum of 64
//     entries is k*2^(e-4) with |k| <= 2^p, so it is exact; with the PreMulSum
//     scalar 0.5 it is k*2^(e-5) with |k| <= 2^p. Magnitudes stay in
//     [2^-10, 2^14] for float16 (normal range).
//   - Prod, floats: +-1, +-2 or +-0.5. In each aligned block of 16 entries
//     exactly two are +-2 and two are +-0.5; a window of 64 entries touches at
//     most 5 blocks, so every partial product is +-2^j with |j| <= 10.
//   - Max, Min, floats: +-(1+f)*2^(x-4) * 2^(e-4) with distinct (sign, first 7
//     fraction bits, x in 0..7) for the entries of a window (an 11-bit
//     bijection of k); extra fraction bits are random.
func baseValue(t reduce.DataType, op reduce.Op, key, k uint64, e int) uint64 {
	hk := mix64(key ^ 0x0dd5eed5 + k*0xd1b54a32d192ed03)
	if !t.IsFloat() {
		w := uint(8 * t.Size())
		var v uint64
		switch op {
		case reduce.Sum, reduce.Avg, reduce.PreMulSum:
			v = hk
		case reduce.Prod:
			v = hk | 1
		case reduce.Max, reduce.Min:
			v = bijW(k+key, w)
		default:
			panic("exact: invalid op " + op.String())
		}
		return v & widthMask(t)
	}
	mb := mantissaBits(t)
	p := int(mb) + 1
	var x float64
	switch op {
	case reduce.Sum, reduce.Avg, reduce.PreMulSum:
		v := uint64(1) << (p - 6)
		x = math.Ldexp(float64(int64(hk%(2*v+1))-int64(v)), e-4)
	case reduce.Prod:
		hb := mix64(key ^ 0xb10c + (k>>4)*golden)
		start, step := hb&15, (hb>>4&7)*2+1 // odd step: 4 distinct positions
		x = 1
		for i := uint64(0); i < 4; i++ {
			if (start+i*step)&15 == k&15 {
				if i < 2 {
					x = 2
				} else {
					x = 0.5
				}
			}
		}
		if hk&1 == 1 {
			x = -x
		}
	case reduce.Max, reduce.Min:
		c := bijW(k+key, 11)
		frac := (c >> 1 & 127) << (mb - 7)
		frac |= hk & (1<<(mb-7) - 1)
		x = math.Ldexp(float64(frac|1<<mb), int(c>>8)-4-int(mb)+e-4)
		if c&1 == 1 {
			x = -x
		}
	default:
		panic("exact: invalid op " + op.String())
	}
	return floatBits(t, x)
}

// fillTable holds the scaled base values of one (t, op, seed), indexed by
// slot: vals[e<<keyBits | k]; for float types fvals holds the same values as
// float64.
type fillTable struct {
	t         reduce.DataType
	op        reduce.Op
	key, mask uint64
	vals      []uint64
	fvals     []float64
}

// expTable holds the reductions of the windows of n ranks, indexed by slot.
type expTable struct {
	vals []uint64
}

type tableKey struct {
	t    reduce.DataType
	op   reduce.Op
	seed uint64
	n    int // 0 for fill tables
}

var cache struct {
	sync.Mutex
	fill map[tableKey]*fillTable
	exp  map[tableKey]*expTable
}

const maxCached = 256

func getFillTable(t reduce.DataType, op reduce.Op, seed uint64) *fillTable {
	tk := tableKey{t, op, seed, 0}
	cache.Lock()
	ft := cache.fill[tk]
	cache.Unlock()
	if ft != nil {
		return ft
	}
	ft = &fillTable{t: t, op: op, key: streamKey(t, op, seed), mask: slotMask(t, op)}
	ft.vals = make([]uint64, ft.mask+1)
	for s := range ft.vals {
		ft.vals[s] = baseValue(t, op, ft.key, uint64(s)&keyMask, s>>keyBits)
	}
	if t.IsFloat() {
		ft.fvals = make([]float64, len(ft.vals))
		for s, b := range ft.vals {
			ft.fvals[s] = floatValue(t, b)
		}
	}
	cache.Lock()
	if cache.fill == nil || len(cache.fill) >= maxCached {
		cache.fill = map[tableKey]*fillTable{}
	}
	cache.fill[tk] = ft
	cache.Unlock()
	return ft
}

// getExpTable returns the table of reductions over n ranks, or nil when it is
// not cached and build is false.
func getExpTable(ft *fillTable, seed uint64, n int, build bool) *expTable {
	tk := tableKey{ft.t, ft.op, seed, n}
	cache.Lock()
	et := cache.exp[tk]
	cache.Unlock()
	if et != nil || !build {
		return et
	}
	et = &expTable{vals: make([]uint64, len(ft.vals))}
	for s := range et.vals {
		et.vals[s] = ft.reduce(uint64(s), n)
	}
	cache.Lock()
	if cache.exp == nil || len(cache.exp) >= maxCached {
		cache.exp = map[tableKey]*expTable{}
	}
	cache.exp[tk] = et
	cache.Unlock()
	return et
}

// reduce returns the reduction over ranks 0..n-1 of the values at slot s,
// with the semantics documented at Expected. For floats it relies on the
// values being exact by construction: sums and products are computed in
// float64, where they are exact, and converted once.
func (ft *fillTable) reduce(s uint64, n int) uint64 {
	t, op := ft.t, ft.op
	if t.IsFloat() {
		var acc float64
		switch op {
		case reduce.Sum, reduce.Avg:
			for r := range n {
				acc += ft.fvals[rankSlot(s, r)]
			}
			if op == reduce.Avg {
				// acc and n are exact in t, so the float64 quotient rounded
				// again to t equals the correctly rounded quotient in t (double
				// rounding is innocuous for division when 53 >= 2p; p <= 24).
				acc /= float64(n)
			}
		case reduce.PreMulSum:
			scalar := Scalar(t)
			for r := range n {
				acc += ft.fvals[rankSlot(s, r)] * scalar
			}
		case reduce.Prod:
			acc = 1
			for r := range n {
				acc *= ft.fvals[rankSlot(s, r)]
			}
		case reduce.Max:
			acc = math.Inf(-1)
			for r := range n {
				acc = max(acc, ft.fvals[rankSlot(s, r)])
			}
		case reduce.Min:
			acc = math.Inf(1)
			for r := range n {
				acc = min(acc, ft.fvals[rankSlot(s, r)])
			}
		}
		return floatBits(t, acc)
	}
	w := uint(8 * t.Size())
	sext := func(v uint64) int64 { return int64(v<<(64-w)) >> (64 - w) }
	var acc uint64
	switch op {
	case reduce.Sum, reduce.Avg:
		for r := range n {
			acc += ft.vals[rankSlot(s, r)]
		}
		if op == reduce.Avg {
			if isSigned(t) {
				acc = uint64(sext(acc) / int64(n))
			} else {
				acc = (acc & widthMask(t)) / uint64(n)
			}
		}
	case reduce.PreMulSum:
		scalar := uint64(int64(Scalar(t)))
		for r := range n {
			acc += ft.vals[rankSlot(s, r)] * scalar
		}
	case reduce.Prod:
		acc = 1
		for r := range n {
			acc *= ft.vals[rankSlot(s, r)]
		}
	case reduce.Max, reduce.Min:
		acc = ft.vals[s]
		for r := 1; r < n; r++ {
			v := ft.vals[rankSlot(s, r)]
			less := v < acc
			if isSigned(t) {
				less = sext(v) < sext(acc)
			}
			if less == (op == reduce.Min) {
				acc = v
			}
		}
	}
	return acc & widthMask(t)
}
