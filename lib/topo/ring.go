// Package topo maps ranks to channels' rings. It is pure: no goroutines, no I/O.
package topo

import (
	"cmp"
	"slices"
)

// Ring is one channel's ring: Order lists the ranks in ring order; data flows
// from Order[i] to Order[i+1].
type Ring struct {
	Order []int
}

// Rings returns one ring per channel. Even channels run 0,1,..,n-1 and odd
// channels run the reverse, so neighbouring channels use different links.
// (lib/ccl's broadcast and reduce chains follow channel 0's ring on every
// channel: see Comm.ringConn.)
func Rings(nRanks, nChannels int) []Ring {
	rings := make([]Ring, nChannels)
	for c := range rings {
		order := make([]int, nRanks)
		for i := range order {
			if c%2 == 0 {
				order[i] = i
			} else {
				order[i] = nRanks - 1 - i
			}
		}
		rings[c] = Ring{Order: order}
	}
	return rings
}

// Index is the position of rank in the ring.
func (r Ring) Index(rank int) int {
	for i, x := range r.Order {
		if x == rank {
			return i
		}
	}
	return -1
}

// Next and Prev are rank's neighbours in the ring.
func (r Ring) Next(rank int) int { n := len(r.Order); return r.Order[(r.Index(rank)+1)%n] }
func (r Ring) Prev(rank int) int { n := len(r.Order); return r.Order[(r.Index(rank)+n-1)%n] }

// Rel returns the rank k positions after rank in the ring (NCCL's ringRanks[k]).
func (r Ring) Rel(rank, k int) int {
	n := len(r.Order)
	return r.Order[((r.Index(rank)+k)%n+n)%n]
}

// HostRings is Rings for ranks grouped into hosts (hostOf[r] is rank r's
// host): each ring visits every host's ranks together, hosts in the order
// of their lowest rank and ranks in rank order within them, so it crosses
// each host boundary once per direction whatever the rank numbering. Odd
// channels run the reverse.
func HostRings(hostOf []int, nChannels int) []Ring {
	n := len(hostOf)
	first := map[int]int{} // host -> its lowest rank
	for r := n - 1; r >= 0; r-- {
		first[hostOf[r]] = r
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(first[hostOf[a]], first[hostOf[b]]) })
	rings := make([]Ring, nChannels)
	for c := range rings {
		o := slices.Clone(order)
		if c%2 == 1 {
			slices.Reverse(o)
		}
		rings[c] = Ring{Order: o}
	}
	return rings
}
