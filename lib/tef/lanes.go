package tef

// Lanes: where events of one kind overlap in time without nesting (NCCL
// launches operations asynchronously; its proxy pipelines the steps of an
// operation and serves several peers on one channel at once), each
// overlapping one goes on a further track, a lane, so that every track
// nests. The NCCL profiler plugin lays its events out so:
//
//	tid c                           channel c's kernel (lane 0)
//	tid RankTrack + lane            the rank's operations and groups
//	tid ProxyTracks + Lanes*c + lane channel c's proxy operations, steps, waits
//	tid KernelTracks + Lanes*c + lane channel c's kernel, lanes 1 on
const (
	Lanes        = 100    // lanes of one kind per channel (or per rank)
	ProxyTracks  = 10000  // the first proxy track
	KernelTracks = 100000 // the first of the kernel's further lanes
)

// OpLane is the tid of lane l of the rank's operations (l < Lanes; lane 0
// is RankTrack).
func OpLane(l int) int { return RankTrack + l }

// ProxyLane is the tid of lane l of channel c's proxy operations.
func ProxyLane(c, l int) int { return ProxyTracks + Lanes*c + l }

// KernelLane is the tid of lane l of channel c's kernel (lane 0 is tid c).
func KernelLane(c, l int) int {
	if l == 0 {
		return c
	}
	return KernelTracks + Lanes*c + l
}

// Track kinds TrackOf tells apart.
const (
	TrackChannel = "channel" // tid c, or a kernel lane of channel c
	TrackRank    = "rank"    // RankTrack and its lanes
	TrackProxy   = "proxy"   // a proxy lane of a channel
	TrackOther   = "other"
)

// TrackOf says what a tid holds: its kind, its channel (-1 for the rank's
// tracks) and its lane.
func TrackOf(tid int) (kind string, channel, lane int) {
	switch {
	case tid >= 0 && tid < RankTrack:
		return TrackChannel, tid, 0
	case tid >= RankTrack && tid < RankTrack+Lanes:
		return TrackRank, -1, tid - RankTrack
	case tid >= ProxyTracks && tid < KernelTracks:
		return TrackProxy, (tid - ProxyTracks) / Lanes, (tid - ProxyTracks) % Lanes
	case tid >= KernelTracks && tid < 2*KernelTracks:
		return TrackChannel, (tid - KernelTracks) / Lanes, (tid - KernelTracks) % Lanes
	}
	return TrackOther, -1, 0
}
