// team.go: teams of the device API (ncclTeam): a set of ranks evenly
// spaced in the world, seen from one of them, and NCCL's conversions
// between teams. Pure arithmetic on a DevComm's rank fields.

package ccl

// Team is a set of NRanks ranks, Stride apart in the world, of which the
// caller is the Rank-th (ncclTeam).
type Team struct{ NRanks, Rank, Stride int }

// TeamWorld is every rank (ncclTeamWorld).
func TeamWorld(d *DevComm) Team { return Team{NRanks: d.NRanks, Rank: d.Rank, Stride: 1} }

// TeamLsa is the ranks of this host, whose memory this rank loads and
// stores (ncclTeamLsa).
func TeamLsa(d *DevComm) Team { return Team{NRanks: d.LsaSize, Rank: d.LsaRank, Stride: 1} }

// TeamRail is the ranks of the same LSA rank on every host (ncclTeamRail).
func TeamRail(d *DevComm) Team {
	return Team{NRanks: d.NRanks / d.LsaSize, Rank: d.Rank / d.LsaSize, Stride: d.LsaSize}
}

// TeamRankToWorld is the world rank of team's rank r (ncclTeamRankToWorld).
func TeamRankToWorld(d *DevComm, team Team, r int) int {
	return d.Rank + (r-team.Rank)*team.Stride
}

// TeamRankToLsa is the LSA rank of team's rank r (ncclTeamRankToLsa): a
// rank of another host lands outside 0..LsaSize-1.
func TeamRankToLsa(d *DevComm, team Team, r int) int {
	return d.LsaRank + (r-team.Rank)*team.Stride
}

// teamOffset is team a's rank of b's rank bPeer, and whether that rank
// falls on a's grid (a multiple of a's stride away from the caller).
func teamOffset(a, b Team, bPeer int) (int, bool) {
	dist := (bPeer - b.Rank) * b.Stride // world distance from the caller
	if dist%a.Stride != 0 {
		return 0, false
	}
	return a.Rank + dist/a.Stride, true
}

// TeamRankIsMember reports whether b's rank bPeer is a member of team a
// (ncclTeamRankIsMember). Both teams contain the caller.
func TeamRankIsMember(a, b Team, bPeer int) bool {
	r, ok := teamOffset(a, b, bPeer)
	return ok && r >= 0 && r < a.NRanks
}

// TeamRankToTeam is team a's rank of b's rank bPeer, or -1 when it is no
// member of a (ncclTeamRankToTeam).
func TeamRankToTeam(a, b Team, bPeer int) int {
	if !TeamRankIsMember(a, b, bPeer) {
		return -1
	}
	r, _ := teamOffset(a, b, bPeer)
	return r
}

// TeamInnerFactor is the team of parent's ranks in the caller's block of
// innerSize consecutive members (ncclTeamInnerFactor); parent.NRanks is a
// multiple of innerSize.
func TeamInnerFactor(parent Team, innerSize int) Team {
	return Team{NRanks: innerSize, Rank: parent.Rank % innerSize, Stride: parent.Stride}
}

// TeamOuterFactor is the team of parent's ranks at the caller's place in
// every block of innerSize (ncclTeamOuterFactor).
func TeamOuterFactor(parent Team, innerSize int) Team {
	return Team{NRanks: parent.NRanks / innerSize, Rank: parent.Rank / innerSize, Stride: parent.Stride * innerSize}
}

// TeamRankInDifference is parent's rank of the index-th member of parent
// that is not in subset, in rank order, or -1 when there are not that
// many (ncclTeamRankInDifference).
func TeamRankInDifference(parent, subset Team, index int) int {
	if index < 0 {
		return -1
	}
	for p := 0; p < parent.NRanks; p++ {
		if TeamRankIsMember(subset, parent, p) {
			continue
		}
		if index == 0 {
			return p
		}
		index--
	}
	return -1
}
