// Package algo holds the pure schedules of the collectives: how an operation's
// elements split over channels, loops, chunks and slices, and which primitive
// each rank runs on which chunk at each step of a ring. No goroutines, no I/O.
package algo

// DivUp is ceil(a/b) for a >= 0, b > 0.
func DivUp(a, b int) int { return (a + b - 1) / b }

// AlignUp rounds a up to a multiple of b.
func AlignUp(a, b int) int { return DivUp(a, b) * b }

// ChannelPart returns the contiguous part [start, start+n) of count elements
// that channel c of nChannels works on: each part holds DivUp(count,
// nChannels) elements rounded up to grain, so trailing channels may get
// nothing (NCCL's ncclCollCbdPart).
func ChannelPart(count, nChannels, grain, c int) (start, n int) {
	per := AlignUp(DivUp(count, nChannels), grain)
	start = min(c*per, count)
	return start, min(per, count-start)
}

// ActiveChannels is how many channels get a non-empty part.
func ActiveChannels(count, nChannels, grain int) int {
	if count == 0 {
		return 0
	}
	return DivUp(count, AlignUp(DivUp(count, nChannels), grain))
}

// RingChunk returns the chunk size of the loop that starts at loopOffset in
// a part of partCount elements: the loop spreads what is left over nRanks
// chunks of at most chunkElems, each a multiple of grain.
func RingChunk(partCount, loopOffset, nRanks, chunkElems, grain int) int {
	return min(chunkElems, AlignUp(DivUp(partCount-loopOffset, nRanks), grain))
}

// ChunkSpan is where chunk k of the loop at loopOffset lies within the part,
// clamped to the part (chunks past the end are empty).
func ChunkSpan(partCount, loopOffset, chunkSize, k int) (off, n int) {
	off = min(loopOffset+k*chunkSize, partCount)
	return off, min(chunkSize, partCount-off)
}

// SliceSize is the Simple protocol's slice of a chunk of nelem elements that
// moves in slicesPerChunk slices: NCCL's max(divUp(nelem, 16*slicesPerChunk)*16,
// sliceElems/32), where sliceElems is the full slice capacity.
func SliceSize(nelem, slicesPerChunk, sliceElems int) int {
	return max(DivUp(nelem, 16*slicesPerChunk)*16, sliceElems/32)
}

// SlicesUsed is how many of a chunk's slices carry data: the leading ones
// of Slices that are not empty, at least one (an empty chunk still moves
// one slice, so both ends count it). Trailing empty slices move nothing:
// both ends skip them alike (over the network each would be a frame of its
// own: a tiny Simple chunk sent its data and then an empty slice).
func SlicesUsed(nelem, slicesPerChunk, sliceElems int) int {
	size := SliceSize(nelem, slicesPerChunk, sliceElems)
	if size <= 0 {
		return 1
	}
	return max(1, min(DivUp(nelem, size), slicesPerChunk))
}

// Slices lists the element counts of the slicesPerChunk slices of a chunk of
// nelem elements (trailing slices may be empty: SlicesUsed leaves them out).
func Slices(nelem, slicesPerChunk, sliceElems int) []int {
	size := SliceSize(nelem, slicesPerChunk, sliceElems)
	out := make([]int, slicesPerChunk)
	for s := range out {
		off := min(s*size, nelem)
		out[s] = min(size, nelem-off)
	}
	return out
}
