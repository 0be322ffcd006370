package exact

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl/lib/reduce"
)

var rankCounts = []int{1, 2, 3, 5, 8, 64}

// ---- the element types' own arithmetic, as a kernel would do it ----

type intT interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64
}

func intOp[T intT](a, b uint64, op reduce.Op) uint64 {
	x, y := T(a), T(b)
	var r T
	switch op {
	case reduce.Sum, reduce.Avg, reduce.PreMulSum:
		r = x + y
	case reduce.Prod:
		r = x * y
	case reduce.Max:
		r = max(x, y)
	case reduce.Min:
		r = min(x, y)
	}
	return uint64(r)
}

func intPremul[T intT](a uint64, s float64) uint64 { return uint64(T(a) * T(s)) }
func intDiv[T intT](a uint64, n int) uint64        { return uint64(T(a) / T(n)) }

// f32 arithmetic: float16 and bfloat16 go through float32 and are rounded to
// 16 bits after every operation; float32 and float64 use Go's own.
var f16Table = func() []float32 {
	tab := make([]float32, 1<<16)
	for b := range tab {
		tab[b] = float32(f16ToF64(uint16(b)))
	}
	return tab
}()

func toF32(t reduce.DataType, b uint64) float32 {
	switch t {
	case reduce.Float16:
		return f16Table[uint16(b)]
	case reduce.Bfloat16:
		return math.Float32frombits(uint32(b) << 16)
	}
	return math.Float32frombits(uint32(b))
}

func fromF32(t reduce.DataType, x float32) uint64 {
	switch t {
	case reduce.Float16:
		return uint64(f16FromF64(float64(x)))
	case reduce.Bfloat16:
		return uint64(bf16FromF64(float64(x)))
	}
	return uint64(math.Float32bits(x))
}

type floatT interface{ ~float32 | ~float64 }

func fOp[F floatT](x, y F, op reduce.Op) F {
	switch op {
	case reduce.Sum, reduce.Avg, reduce.PreMulSum:
		return x + y
	case reduce.Prod:
		return x * y
	case reduce.Max:
		return max(x, y)
	}
	return min(x, y)
}

// typeOp combines two elements (bits) of t with op in t's arithmetic.
func typeOp(t reduce.DataType, op reduce.Op, a, b uint64) uint64 {
	var r uint64
	switch t {
	case reduce.Int8:
		r = intOp[int8](a, b, op)
	case reduce.Uint8:
		r = intOp[uint8](a, b, op)
	case reduce.Int32:
		r = intOp[int32](a, b, op)
	case reduce.Uint32:
		r = intOp[uint32](a, b, op)
	case reduce.Int64:
		r = intOp[int64](a, b, op)
	case reduce.Uint64:
		r = intOp[uint64](a, b, op)
	case reduce.Float64:
		r = math.Float64bits(fOp(math.Float64frombits(a), math.Float64frombits(b), op))
	default:
		r = fromF32(t, fOp(toF32(t, a), toF32(t, b), op))
	}
	return r & widthMask(t)
}

// typePremul is x*scalar in t's arithmetic.
func typePremul(t reduce.DataType, a uint64, s float64) uint64 {
	var r uint64
	switch t {
	case reduce.Int8:
		r = intPremul[int8](a, s)
	case reduce.Uint8:
		r = intPremul[uint8](a, s)
	case reduce.Int32:
		r = intPremul[int32](a, s)
	case reduce.Uint32:
		r = intPremul[uint32](a, s)
	case reduce.Int64:
		r = intPremul[int64](a, s)
	case reduce.Uint64:
		r = intPremul[uint64](a, s)
	case reduce.Float64:
		r = math.Float64bits(math.Float64frombits(a) * s)
	default:
		r = fromF32(t, toF32(t, a)*float32(s))
	}
	return r & widthMask(t)
}

// typeDiv is a/n in t's arithmetic: truncating for integers, one rounding for
// floats (float16/bfloat16 divide in float32, which rounded again to 16 bits
// is the correctly rounded quotient since 24 >= 2*11).
func typeDiv(t reduce.DataType, a uint64, n int) uint64 {
	var r uint64
	switch t {
	case reduce.Int8:
		r = intDiv[int8](a, n)
	case reduce.Uint8:
		r = intDiv[uint8](a, n)
	case reduce.Int32:
		r = intDiv[int32](a, n)
	case reduce.Uint32:
		r = intDiv[uint32](a, n)
	case reduce.Int64:
		r = intDiv[int64](a, n)
	case reduce.Uint64:
		r = intDiv[uint64](a, n)
	case reduce.Float64:
		r = math.Float64bits(math.Float64frombits(a) / float64(n))
	default:
		r = fromF32(t, toF32(t, a)/float32(n))
	}
	return r & widthMask(t)
}

// reduceInOrder reduces vals (one per rank) visiting the ranks in order, in
// t's arithmetic.
func reduceInOrder(t reduce.DataType, op reduce.Op, vals []uint64, order []int) uint64 {
	get := func(r int) uint64 {
		if op == reduce.PreMulSum {
			return typePremul(t, vals[r], Scalar(t))
		}
		return vals[r]
	}
	acc := get(order[0])
	for _, r := range order[1:] {
		acc = typeOp(t, op, acc, get(r))
	}
	if op == reduce.Avg {
		acc = typeDiv(t, acc, len(vals))
	}
	return acc
}

// reduceTree combines neighbours pairwise, level by level (the odd one out is
// carried up), then applies Avg's division.
func reduceTree(t reduce.DataType, op reduce.Op, vals []uint64) uint64 {
	level := make([]uint64, len(vals))
	for r, v := range vals {
		if op == reduce.PreMulSum {
			v = typePremul(t, v, Scalar(t))
		}
		level[r] = v
	}
	for len(level) > 1 {
		next := level[:0:0]
		for i := 0; i+1 < len(level); i += 2 {
			next = append(next, typeOp(t, op, level[i], level[i+1]))
		}
		if len(level)%2 == 1 {
			next = append(next, level[len(level)-1])
		}
		level = next
	}
	if op == reduce.Avg {
		return typeDiv(t, level[0], len(vals))
	}
	return level[0]
}

// ---- dumb reference of Fill ----

func refValue(t reduce.DataType, op reduce.Op, seed uint64, rank, index int) uint64 {
	key := streamKey(t, op, seed)
	s := slotOf(key, slotMask(t, op), index)
	return baseValue(t, op, key, (s+uint64(rank))&keyMask, int(s>>keyBits))
}

func fillRanks(t reduce.DataType, op reduce.Op, seed uint64, n, first, count int) [][]byte {
	bufs := make([][]byte, n)
	for r := range bufs {
		bufs[r] = make([]byte, count*t.Size())
		Fill(bufs[r], t, op, seed, r, n, first, count)
	}
	return bufs
}

// The defining property: every order of reduction, in the element type's own
// arithmetic, gives Expected's bits.
func TestAllOrdersGiveExpected(t *testing.T) {
	const first = 1<<40 + 17
	count := 300
	if raceEnabled {
		count = 60
	}
	for _, dt := range reduce.AllDataTypes() {
		t.Run(dt.String(), func(t *testing.T) {
			t.Parallel()
			size := dt.Size()
			for _, op := range reduce.AllOps() {
				seed := 100 + uint64(op)
				for _, n := range rankCounts {
					bufs := fillRanks(dt, op, seed, n, first, count)
					want := make([]byte, count*size)
					Expected(want, dt, op, seed, n, first, count)
					rng := rand.New(rand.NewPCG(uint64(n), 9))
					names := []string{"forward", "backward", "shuffled", "ring"}
					orders := make([][]int, len(names))
					for i := range orders {
						orders[i] = make([]int, n)
					}
					vals := make([]uint64, n)
					bad := 0
					for j := range count {
						for r := range n {
							vals[r] = load(bufs[r], j, size)
							orders[0][r] = r
							orders[1][r] = n - 1 - r
							orders[3][r] = (r + j) % n // ring: starts at a per-element rank
						}
						copy(orders[2], orders[0])
						rng.Shuffle(n, func(a, b int) { orders[2][a], orders[2][b] = orders[2][b], orders[2][a] })
						w := load(want, j, size)
						for i := range len(names) + 1 {
							var got uint64
							name := "tree"
							if i < len(names) {
								name, got = names[i], reduceInOrder(dt, op, vals, orders[i])
							} else {
								got = reduceTree(dt, op, vals)
							}
							if got != w {
								bad++
								if bad <= 5 {
									t.Errorf("%v %v n=%d index %d: %s order gives %#x, Expected %#x (inputs %#x)",
										dt, op, n, first+j, name, got, w, vals)
								}
							}
						}
					}
				}
			}
		})
	}
}

// Expected gives the same through its table (long ranges) and directly
// (short ranges).
func TestExpectedPaths(t *testing.T) {
	for _, dt := range reduce.AllDataTypes() {
		for _, op := range reduce.AllOps() {
			for _, n := range []int{1, 5, 64} {
				const first = 777
				nSlots := int(slotMask(dt, op)) + 1
				long := make([]byte, nSlots*dt.Size())
				Expected(long, dt, op, 9, n, first, nSlots) // builds the table
				short := make([]byte, 50*dt.Size())
				ft := getFillTable(dt, op, 9)
				for j := range 50 {
					store(short, j, dt.Size(), ft.reduce(slotOf(ft.key, ft.mask, first+300+j), n))
				}
				if w, i := Compare(short, long[300*dt.Size():350*dt.Size()], dt, 0); w != 0 {
					t.Fatalf("%v %v n=%d: table and direct reduction differ at %d", dt, op, n, i)
				}
			}
		}
	}
}

// Fill agrees with the dumb per-element reference, and ranges compose.
func TestFillMatchesReference(t *testing.T) {
	for _, dt := range reduce.AllDataTypes() {
		for _, op := range reduce.AllOps() {
			const first, count = 99991, 1500
			for _, r := range []int{0, 1, 7, 63} {
				buf := make([]byte, count*dt.Size())
				Fill(buf, dt, op, 5, r, 64, first, count)
				for j := range count {
					if got, want := load(buf, j, dt.Size()), refValue(dt, op, 5, r, first+j); got != want {
						t.Fatalf("%v %v rank %d index %d: Fill %#x, reference %#x", dt, op, r, first+j, got, want)
					}
				}
				part := make([]byte, 100*dt.Size())
				Fill(part, dt, op, 5, r, 64, first+1234, 100)
				if w, i := Compare(part, buf[1234*dt.Size():1334*dt.Size()], dt, 0); w != 0 {
					t.Fatalf("%v %v: Fill of a sub-range differs at %d", dt, op, i)
				}
			}
		}
	}
}

// Exhaustive over all slots, for windows of MaxRanks entries: the bounds
// that make every partial reduction exact.
func TestExactnessBounds(t *testing.T) {
	for _, dt := range reduce.AllDataTypes() {
		for _, op := range reduce.AllOps() {
			for _, seed := range []uint64{0, 0xdeadbeef} {
				ft := getFillTable(dt, op, seed)
				xs := make([]float64, len(ft.vals))
				for s, b := range ft.vals {
					if b&^widthMask(dt) != 0 {
						t.Fatalf("%v %v: value %#x wider than the type", dt, op, b)
					}
					if dt.IsFloat() {
						x := floatValue(dt, b)
						if math.IsNaN(x) || math.IsInf(x, 0) || floatBits(dt, x) != b {
							t.Fatalf("%v %v: value %#x not finite or not exact", dt, op, b)
						}
						xs[s] = x
					}
				}
				if err := checkWindows(dt, op, ft.vals, xs); err != nil {
					t.Fatalf("%v %v seed %#x: %v", dt, op, seed, err)
				}
			}
		}
	}
}

// checkWindows checks every window of MaxRanks consecutive keys (cyclic) of
// every scale row of a fill table (bits vals, float values xs).
func checkWindows(dt reduce.DataType, op reduce.Op, vals []uint64, xs []float64) error {
	for row := 0; row < len(vals); row += numKeys {
		e := row >> keyBits
		at := func(k int) int { return row + k&keyMask }
		switch {
		case op == reduce.Max || op == reduce.Min:
			count := map[uint64]int{}
			for k := range numKeys + MaxRanks {
				count[vals[at(k)]]++
				if k >= MaxRanks {
					count[vals[at(k-MaxRanks)]]--
				}
				if count[vals[at(k)]] > 1 {
					return fmt.Errorf("value %#x repeats within %d keys", vals[at(k)], MaxRanks)
				}
			}
		case !dt.IsFloat():
			// Wrapping sums and products are exact.
		case op == reduce.Prod:
			twos, halves := 0, 0
			count := func(k, d int) {
				switch math.Abs(xs[at(k)]) {
				case 2:
					twos += d
				case 0.5:
					halves += d
				}
			}
			for k := range numKeys + MaxRanks {
				if a := math.Abs(xs[at(k)]); a != 1 && a != 2 && a != 0.5 {
					return fmt.Errorf("value %v not in {+-1, +-2, +-0.5}", xs[at(k)])
				}
				count(k, 1)
				if k >= MaxRanks {
					count(k-MaxRanks, -1)
				}
				if twos > 10 || halves > 10 {
					return fmt.Errorf("%d twos and %d halves within %d keys", twos, halves, MaxRanks)
				}
			}
		default:
			// Sum-like: every value is a multiple of lsb and the sum of
			// magnitudes of a window is at most 2^p*lsb, so every partial sum,
			// in any order, is an integer multiple of lsb of at most p bits;
			// such numbers are normal and finite in t.
			p := int(mantissaBits(dt)) + 1
			lsb := math.Ldexp(1, e-4)
			scale := 1.0
			if op == reduce.PreMulSum {
				scale = Scalar(dt)
			}
			lsb *= scale
			if math.Ldexp(lsb, p) > maxFinite(dt) || lsb < minNormal(dt) {
				return fmt.Errorf("multiples of %v up to 2^%d not all normal in %v", lsb, p, dt)
			}
			if op == reduce.Avg && lsb/MaxRanks < minNormal(dt) {
				return fmt.Errorf("avg of %v may be subnormal", lsb)
			}
			total := 0.0 // exact: integers times lsb below 2^53
			for k := range numKeys + MaxRanks {
				x := xs[at(k)] * scale
				if q := x / lsb; q != math.Trunc(q) {
					return fmt.Errorf("%v not a multiple of %v", x, lsb)
				}
				total += math.Abs(x)
				if k >= MaxRanks {
					total -= math.Abs(xs[at(k-MaxRanks)] * scale)
				}
				if total > math.Ldexp(lsb, p) {
					return fmt.Errorf("sum of magnitudes %v exceeds 2^%d*%v", total, p, lsb)
				}
			}
		}
	}
	return nil
}

func maxFinite(dt reduce.DataType) float64 {
	switch dt {
	case reduce.Float16:
		return 65504
	case reduce.Float64:
		return math.MaxFloat64
	case reduce.Float32:
		return math.MaxFloat32
	}
	return bf16ToF64(0x7f7f)
}

func minNormal(dt reduce.DataType) float64 {
	switch dt {
	case reduce.Float16:
		return math.Ldexp(1, -14)
	case reduce.Float64:
		return math.Ldexp(1, -1022)
	}
	return math.Ldexp(1, -126)
}

// Avg of floats against an independent exact rounding (big.Float with the
// type's precision, nearest even), for every slot. The window sums are exact
// in float64 (TestExactnessBounds).
func TestAvgRounding(t *testing.T) {
	for _, dt := range []reduce.DataType{reduce.Float16, reduce.Bfloat16, reduce.Float32, reduce.Float64} {
		ft := getFillTable(dt, reduce.Avg, 11)
		p := mantissaBits(dt) + 1
		for _, n := range []int{3, 7, 64} {
			if raceEnabled && n == 7 {
				continue
			}
			et := getExpTable(ft, 11, n, true)
			bn := new(big.Float).SetInt64(int64(n))
			q := new(big.Float).SetPrec(p).SetMode(big.ToNearestEven)
			for s := range et.vals {
				sum := 0.0
				for r := range n {
					sum += ft.fvals[rankSlot(uint64(s), r)]
				}
				q.Quo(big.NewFloat(sum), bn)
				x, _ := q.Float64()
				if want := floatBits(dt, x); et.vals[s] != want {
					t.Fatalf("%v avg n=%d slot %d: %#x, want %#x (%v)", dt, n, s, et.vals[s], want, x)
				}
			}
		}
	}
}

func TestValuesVary(t *testing.T) {
	const count = 2048
	for _, dt := range reduce.AllDataTypes() {
		for _, op := range reduce.AllOps() {
			bufs := fillRanks(dt, op, 42, 5, 1000, count)
			size := dt.Size()
			for r := range 5 {
				for q := range r {
					if w, _ := Compare(bufs[r], bufs[q], dt, 0); w < count/4 {
						t.Errorf("%v %v: ranks %d and %d differ in only %d of %d elements", dt, op, q, r, w, count)
					}
				}
				// Shifted by one index.
				if w, _ := Compare(bufs[r][size:], bufs[r][:len(bufs[r])-size], dt, 0); w < count/4 {
					t.Errorf("%v %v rank %d: neighbouring indices equal too often (%d differ)", dt, op, r, w)
				}
				if dt.IsFloat() || isSigned(dt) {
					neg := 0
					for j := range count {
						v := load(bufs[r], j, size)
						if v>>(8*size-1)&1 == 1 {
							neg++
						}
					}
					if neg < count/10 {
						t.Errorf("%v %v rank %d: only %d negative values", dt, op, r, neg)
					}
				}
			}
			for _, n := range []int{3, 64} {
				want := make([]byte, count*size)
				Expected(want, dt, op, 42, n, 1000, count)
				distinct := map[uint64]bool{}
				for j := range count {
					distinct[load(want, j, size)] = true
				}
				if len(distinct) < 3 {
					t.Errorf("%v %v n=%d: Expected has only %d distinct values", dt, op, n, len(distinct))
				}
			}
			// Different seeds give different data.
			other := make([]byte, count*size)
			Fill(other, dt, op, 43, 0, 5, 1000, count)
			if w, _ := Compare(other, bufs[0], dt, 0); w < count/4 {
				t.Errorf("%v %v: seeds 42 and 43 differ in only %d elements", dt, op, w)
			}
		}
	}
}

// Expected with n=1 is the data itself (Avg divides by 1; PreMulSum scales).
func TestSingleRank(t *testing.T) {
	for _, dt := range reduce.AllDataTypes() {
		for _, op := range []reduce.Op{reduce.Sum, reduce.Prod, reduce.Max, reduce.Min, reduce.Avg} {
			in := fillRanks(dt, op, 3, 1, 0, 500)[0]
			want := make([]byte, len(in))
			Expected(want, dt, op, 3, 1, 0, 500)
			if w, i := Compare(in, want, dt, 0); w != 0 {
				t.Errorf("%v %v: one rank's Expected differs from its input at %d", dt, op, i)
			}
		}
	}
}

func TestFillPlain(t *testing.T) {
	const count = 4096
	for _, dt := range reduce.AllDataTypes() {
		size := dt.Size()
		a := make([]byte, count*size)
		b := make([]byte, count*size)
		FillPlain(a, dt, 1, 0, 500, count)
		FillPlain(b, dt, 1, 1, 500, count)
		minDiff := count * 9 / 10
		if size == 1 {
			minDiff = count * 3 / 4
		}
		if w, _ := Compare(a, b, dt, 0); w < minDiff {
			t.Errorf("%v: ranks 0 and 1 differ in only %d elements", dt, w)
		}
		FillPlain(b, dt, 2, 0, 500, count)
		if w, _ := Compare(a, b, dt, 0); w < minDiff {
			t.Errorf("%v: seeds 1 and 2 differ in only %d elements", dt, w)
		}
		if w, _ := Compare(a[size:], a[:len(a)-size], dt, 0); w < minDiff {
			t.Errorf("%v: neighbouring indices differ in only %d elements", dt, w)
		}
		// Against a per-element reference, over unaligned ranges.
		for _, rng := range [][2]int{{0, 1}, {3, 1}, {5, 27}, {600, 10}, {1<<33 + 1, 1500}} {
			got := make([]byte, rng[1]*size)
			FillPlain(got, dt, 1, 3, rng[0], rng[1])
			key := mix64(1 ^ 0x91a1 + mix64(3^0x7a11c0de))
			per := 8 / size
			for j := range rng[1] {
				i := rng[0] + j
				v := mix64(key+uint64(i/per)*golden) >> (8 * size * (i % per)) & widthMask(dt)
				if dt.IsFloat() {
					if x := floatValue(dt, v); math.IsNaN(x) || math.IsInf(x, 0) {
						v ^= 1 << (8*size - 2) // top exponent bit
					}
				}
				if got := load(got, j, size); got != v {
					t.Fatalf("%v: FillPlain index %d: %#x, want %#x", dt, i, got, v)
				}
			}
		}
		part := make([]byte, 10*size)
		FillPlain(part, dt, 1, 0, 600, 10)
		if w, _ := Compare(part, a[100*size:110*size], dt, 0); w != 0 {
			t.Errorf("%v: FillPlain of a sub-range differs", dt)
		}
		if dt.IsFloat() {
			for j := range count {
				if x := floatValue(dt, load(a, j, size)); math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("%v: FillPlain wrote %v", dt, x)
				}
			}
		}
	}
}

func TestCompare(t *testing.T) {
	for _, dt := range reduce.AllDataTypes() {
		size := dt.Size()
		want := make([]byte, 64*size)
		FillPlain(want, dt, 7, 3, 0, 64)
		got := append([]byte(nil), want...)
		if w, i := Compare(got, want, dt, 0); w != 0 || i != -1 {
			t.Fatalf("%v: equal buffers: %d wrong, first %d", dt, w, i)
		}
		for bit := 0; bit < len(got)*8; bit += 7 {
			got[bit/8] ^= 1 << (bit % 8)
			if w, i := Compare(got, want, dt, 0); w != 1 || i != bit/8/size {
				t.Fatalf("%v: bit %d flipped: %d wrong, first %d", dt, bit, w, i)
			}
			got[bit/8] ^= 1 << (bit % 8)
		}
		got[3*size] ^= 1
		got[10*size] ^= 0x10
		if w, i := Compare(got, want, dt, 0); w != 2 || i != 3 {
			t.Fatalf("%v: two flips: %d wrong, first %d", dt, w, i)
		}
		if w, i := Compare(got[:5*size], want, dt, 0); w != 60 || i != 3 {
			t.Fatalf("%v: short got: %d wrong, first %d", dt, w, i)
		}
		if !dt.IsFloat() {
			// ULP mode does not loosen integer comparison.
			if w, _ := Compare(got, want, dt, 100); w != 2 {
				t.Fatalf("%v: integers in ULP mode: %d wrong", dt, w)
			}
		}
	}
	// ULP mode for floats.
	for _, dt := range []reduce.DataType{reduce.Float16, reduce.Bfloat16, reduce.Float32, reduce.Float64} {
		size := dt.Size()
		enc := func(xs ...float64) []byte {
			b := make([]byte, len(xs)*size)
			for i, x := range xs {
				store(b, i, size, floatBits(dt, x))
			}
			return b
		}
		one := floatValue(dt, floatBits(dt, 1)+1) - 1 // 1 ulp at 1
		want := enc(1, -1, 0, 0, 1000, math.NaN(), math.Inf(1), 1)
		got := enc(1+one, -1-one, math.Copysign(0, -1), 0, 1000, math.NaN(), math.Inf(1), 1+2*one)
		if w, i := Compare(got, want, dt, 1); w != 1 || i != 7 {
			t.Errorf("%v ulps=1: %d wrong, first %d", dt, w, i)
		}
		if w, i := Compare(got, want, dt, 2); w != 0 || i != -1 {
			t.Errorf("%v ulps=2: %d wrong, first %d", dt, w, i)
		}
		if w, i := Compare(got, want, dt, 0); w != 4 || i != 0 {
			t.Errorf("%v exact: %d wrong, first %d", dt, w, i)
		}
		// Across zero: smallest positive vs smallest negative are 2 apart.
		tiny := floatValue(dt, 1)
		if w, _ := Compare(enc(tiny), enc(-tiny), dt, 1); w != 1 {
			t.Errorf("%v: +-tiny within 1 ulp", dt)
		}
		if w, _ := Compare(enc(tiny), enc(-tiny), dt, 2); w != 0 {
			t.Errorf("%v: +-tiny not within 2 ulps", dt)
		}
		if w, _ := Compare(enc(math.NaN()), enc(1), dt, 1000); w != 1 {
			t.Errorf("%v: NaN matched a number", dt)
		}
		if w, _ := Compare(enc(1), enc(-1), dt, 1<<20); w != 1 && size > 2 {
			t.Errorf("%v: 1 matched -1", dt)
		}
	}
}

func TestScalar(t *testing.T) {
	for _, dt := range reduce.AllDataTypes() {
		s := Scalar(dt)
		if dt.IsFloat() && s != 0.5 || !dt.IsFloat() && s != 2 {
			t.Errorf("Scalar(%v) = %v", dt, s)
		}
	}
}

func TestPanics(t *testing.T) {
	buf := make([]byte, 64)
	for name, f := range map[string]func(){
		"nRanks 0":    func() { Fill(buf, reduce.Int32, reduce.Sum, 0, 0, 0, 0, 1) },
		"nRanks 65":   func() { Expected(buf, reduce.Int32, reduce.Sum, 0, 65, 0, 1) },
		"rank n":      func() { Fill(buf, reduce.Int32, reduce.Sum, 0, 2, 2, 0, 1) },
		"short":       func() { Fill(buf, reduce.Int64, reduce.Sum, 0, 0, 2, 0, 9) },
		"short plain": func() { FillPlain(buf, reduce.Int64, 0, 0, 0, 9) },
		"bad op":      func() { Fill(buf, reduce.Int64, reduce.Op(99), 0, 0, 2, 0, 1) },
		"bad type":    func() { Compare(buf, buf, reduce.DataType(99), 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

const benchBytes = 64 << 20

func BenchmarkFill(b *testing.B) {
	for _, dt := range []reduce.DataType{reduce.Int8, reduce.Float16, reduce.Float32, reduce.Float64} {
		b.Run(dt.String(), func(b *testing.B) {
			buf := make([]byte, benchBytes)
			b.SetBytes(benchBytes)
			for b.Loop() {
				Fill(buf, dt, reduce.Sum, 1, 3, 8, 0, benchBytes/dt.Size())
			}
		})
	}
}

func BenchmarkExpected(b *testing.B) {
	for _, dt := range []reduce.DataType{reduce.Int8, reduce.Float32} {
		b.Run(dt.String(), func(b *testing.B) {
			buf := make([]byte, benchBytes)
			b.SetBytes(benchBytes)
			for b.Loop() {
				Expected(buf, dt, reduce.Avg, 1, 64, 0, benchBytes/dt.Size())
			}
		})
	}
}

func BenchmarkFillPlain(b *testing.B) {
	buf := make([]byte, benchBytes)
	b.SetBytes(benchBytes)
	for b.Loop() {
		FillPlain(buf, reduce.Float32, 1, 3, 0, benchBytes/4)
	}
}

func BenchmarkCompare(b *testing.B) {
	x := make([]byte, benchBytes)
	y := make([]byte, benchBytes)
	b.SetBytes(benchBytes)
	for b.Loop() {
		Compare(x, y, reduce.Float32, 1)
	}
}
