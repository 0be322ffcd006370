package tracestat

import "sort"

// interval is [lo, hi] in microseconds.
type interval struct{ lo, hi float64 }

// union merges intervals into disjoint ones, in order.
func union(in []interval) []interval {
	if len(in) == 0 {
		return nil
	}
	s := append([]interval(nil), in...)
	sort.Slice(s, func(a, b int) bool { return s[a].lo < s[b].lo })
	out := []interval{s[0]}
	for _, v := range s[1:] {
		last := &out[len(out)-1]
		if v.lo <= last.hi {
			last.hi = max(last.hi, v.hi)
			continue
		}
		out = append(out, v)
	}
	return out
}

// length is the total length of disjoint intervals.
func length(u []interval) float64 {
	var n float64
	for _, v := range u {
		n += v.hi - v.lo
	}
	return n
}

// overlap is the length of the part of disjoint intervals a that lies in
// disjoint intervals b.
func overlap(a, b []interval) float64 {
	var n float64
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if hi > lo {
			n += hi - lo
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return n
}
