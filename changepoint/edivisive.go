package changepoint

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// scratch is the buffers one detection reuses across its permutations, so a
// permutation test allocates nothing.
type scratch struct {
	left, right []float64 // per point: summed distance to the points before it, after it
	perm        []float64 // the permuted copy of the stretch
}

func (s *scratch) grow(n int) {
	if cap(s.left) < n {
		s.left, s.right, s.perm = make([]float64, n), make([]float64, n), make([]float64, n)
	}
	s.left, s.right, s.perm = s.left[:n], s.right[:n], s.perm[:n]
}

// curve evaluates Q at every split τ of x with at least minSize points on
// each side, minSize >= 2 (Q needs a pair within each part). It returns the
// best split, its Q, and Q at the split at (NaN when at is out of range).
// O(n²): one pass over the pairs gives every point's distance sums; the
// within-part and between-part sums of every τ follow by prefix sums.
func (s *scratch) curve(x []float64, minSize, at int) (best int, bestQ, atQ float64) {
	n := len(x)
	s.grow(n)
	left, right := s.left, s.right
	clear(left)
	clear(right)
	for i := 0; i < n; i++ {
		xi := x[i]
		var r float64
		for j := i + 1; j < n; j++ {
			d := math.Abs(xi - x[j])
			r += d
			left[j] += d
		}
		right[i] = r
	}
	var total float64
	for _, v := range left {
		total += v
	}
	// withinL: pairs inside x[:τ]; withinR: pairs inside x[τ:].
	var withinL float64
	for j := 0; j < minSize; j++ {
		withinL += left[j]
	}
	withinR := total
	for i := 0; i < minSize; i++ {
		withinR -= right[i]
	}
	best, bestQ, atQ = -1, math.Inf(-1), math.NaN()
	for tau := minSize; tau <= n-minSize; tau++ {
		m, k := float64(tau), float64(n-tau)
		between := total - withinL - withinR
		e := 2*between/(m*k) - withinL/(m*(m-1)/2) - withinR/(k*(k-1)/2)
		q := m * k / (m + k) * e
		if q > bestQ {
			best, bestQ = tau, q
		}
		if tau == at {
			atQ = q
		}
		withinL += left[tau]
		withinR -= right[tau]
	}
	return best, bestQ, atQ
}

// permTest is the permutation p-value of the statistic qObs observed on x:
// (e+1)/(r+1), where e of r random permutations of x reach a best Q of at
// least qObs. It stops as soon as the p-value must exceed alpha (it then
// returns its estimate so far, above alpha), so a stretch with no change
// costs a few permutations, not all of them.
func (s *scratch) permTest(x []float64, qObs float64, minSize, perms int, alpha float64) float64 {
	n := len(x)
	s.grow(n)
	rng := rand.New(rand.NewPCG(seedOf(x)))
	// Near-ties count as reaching qObs: the same values summed in another
	// order differ in the last bits, and a tie is no evidence of a change.
	bar := qObs - 1e-9*math.Abs(qObs)
	// exceedances beyond maxE make (e+1)/(perms+1) exceed alpha.
	maxE := int(math.Floor(alpha*float64(perms+1))) - 1
	e := 0
	for r := 1; r <= perms; r++ {
		p := s.perm // s.curve reuses left/right, not perm
		copy(p, x)
		for i := n - 1; i > 0; i-- {
			j := rng.IntN(i + 1)
			p[i], p[j] = p[j], p[i]
		}
		if _, q, _ := s.curve(p, minSize, -1); q >= bar {
			e++
			if e > maxE {
				return float64(e+1) / float64(r+1)
			}
		}
	}
	return float64(e+1) / float64(perms+1)
}

// seedOf hashes the values (FNV-1a of their bits), so a permutation test is
// a function of what it tests alone.
func seedOf(x []float64) (uint64, uint64) {
	h := fnv.New64a()
	var b [8]byte
	for _, v := range x {
		u := math.Float64bits(v)
		for i := range b {
			b[i] = byte(u >> (8 * i))
		}
		h.Write(b[:])
	}
	s := h.Sum64()
	return s, s ^ 0x9e3779b97f4a7c15 ^ uint64(len(x))
}
