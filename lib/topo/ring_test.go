package topo

import "testing"

func TestRingsArePermutationsAndNeighboursAgree(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for _, r := range Rings(n, 4) {
			seen := map[int]bool{}
			for _, x := range r.Order {
				if x < 0 || x >= n || seen[x] {
					t.Fatalf("n=%d: order %v is not a permutation", n, r.Order)
				}
				seen[x] = true
			}
			for rank := 0; rank < n; rank++ {
				if r.Prev(r.Next(rank)) != rank {
					t.Fatalf("n=%d rank %d: prev(next) != rank", n, rank)
				}
				if r.Rel(rank, 0) != rank || r.Rel(rank, 1) != r.Next(rank) || r.Rel(rank, n-1) != r.Prev(rank) {
					t.Fatalf("n=%d rank %d: Rel disagrees with Next/Prev", n, rank)
				}
			}
		}
	}
	if rs := Rings(3, 2); rs[0].Next(0) != 1 || rs[1].Next(0) != 2 {
		t.Fatalf("even and odd channels should run in opposite directions: %v", rs)
	}
}
