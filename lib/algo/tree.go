package algo

import "github.com/gccl/gccl/lib/proto"

// TreeChunkBytes is the payload of one tree allreduce chunk for protocol p
// on FIFOs of buffSize bytes, for an operation of bytes over nChannels
// channels, nRanks ranks on nHosts hosts, in trees depth hops deep. Tree
// chunks are one step (NCCL's tree uses chunkSteps = sliceSteps = 1); for
// messages too small to fill the pipeline they shrink as NCCL's enqueue.cc
// shrinks them, so that every level of the tree has chunks to work on:
//
//   - Simple halves the step while bytes/(nChannels*chunk) is below 8*depth
//     (down to 128 KiB), 4*depth (down to 64 KiB) and depth (down to 32 KiB);
//   - LL128 halves the step's wire size while bytes/(nChannels*chunk) is
//     below 64/ppn*(1+log2(nHosts)+ppn/10) (down to 128 KiB) and 16/ppn times
//     that (down to 32 KiB), ppn being ranks per host; the payload is 120/128
//     of the wire size, rounded down to the grain;
//   - LL keeps one step (half of it payload).
//
// The result is at least one grain.
func TreeChunkBytes(p proto.Protocol, buffSize int, bytes int64, nChannels, nRanks, nHosts, depth int) int {
	step := buffSize / proto.Steps
	perChunk := func(chunk int) int64 { return bytes / int64(max(nChannels, 1)*chunk) }
	switch p {
	case proto.Simple:
		d := int64(max(depth, 1))
		for _, r := range []struct {
			mult  int64
			floor int
		}{{8, 128 << 10}, {4, 64 << 10}, {1, 32 << 10}} {
			for perChunk(step) < r.mult*d && step > r.floor {
				step /= 2
			}
		}
		return max(step/p.Grain()*p.Grain(), p.Grain())
	case proto.LL128:
		ppn := float64(nRanks) / float64(max(nHosts, 1))
		nsteps := 1 + float64(log2Floor(max(nHosts, 1))) + 0.1*ppn
		for float64(perChunk(step)) < nsteps*64/ppn && step > 128<<10 {
			step /= 2
		}
		for float64(perChunk(step)) < nsteps*16/ppn && step > 32<<10 {
			step /= 2
		}
		data := step / proto.LL128LineBytes * proto.LL128DataPerLine
		return max(data/p.Grain()*p.Grain(), p.Grain())
	default:
		return max(p.StepData(buffSize)/p.Grain()*p.Grain(), p.Grain())
	}
}

func log2Floor(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}
