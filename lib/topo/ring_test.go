package topo

import (
	"slices"
	"testing"
)

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

// TestHostRingsCrossEachBoundaryOnce: for every grouping of up to 7 ranks
// into hosts (hostOf over all assignments), each ring is a permutation
// that crosses host boundaries exactly once per host (a host's ranks are
// contiguous in it), odd channels reversed, and contiguous rank numbering
// gives the plain rings.
func TestHostRingsCrossEachBoundaryOnce(t *testing.T) {
	for n := 1; n <= 7; n++ {
		hostOf := make([]int, n)
		var walk func(r, hosts int)
		walk = func(r, hosts int) {
			if r == n {
				rings := HostRings(hostOf, 2)
				for c, ring := range rings {
					seen := map[int]bool{}
					crossings := 0
					for i, x := range ring.Order {
						seen[x] = true
						if hostOf[x] != hostOf[ring.Order[(i+1)%n]] {
							crossings++
						}
					}
					if len(seen) != n {
						t.Fatalf("hostOf %v channel %d: %v is not a permutation", hostOf, c, ring.Order)
					}
					if want := hosts; hosts > 1 && crossings != want {
						t.Fatalf("hostOf %v channel %d: %v crosses %d boundaries, want %d", hostOf, c, ring.Order, crossings, want)
					}
				}
				for i := range n {
					if rings[1].Order[i] != rings[0].Order[n-1-i] {
						t.Fatalf("hostOf %v: channel 1 is not channel 0 reversed", hostOf)
					}
				}
				return
			}
			for h := 0; h <= hosts && h < n; h++ { // a new host gets the next number
				hostOf[r] = h
				walk(r+1, max(hosts, h+1))
			}
		}
		walk(0, 0)
	}
	contiguous := []int{0, 0, 1, 1, 1, 2}
	if got, want := HostRings(contiguous, 2), Rings(6, 2); !slices.Equal(got[0].Order, want[0].Order) || !slices.Equal(got[1].Order, want[1].Order) {
		t.Fatalf("contiguous hosts: %v, want %v", got, want)
	}
}
