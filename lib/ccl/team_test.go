package ccl

import (
	"slices"
	"testing"
)

// teamMembers is team t's world ranks seen from world rank me, in team
// order, by the definition (not through the helpers under test).
func teamMembers(me int, t Team) []int {
	var ws []int
	for r := 0; r < t.NRanks; r++ {
		ws = append(ws, me+(r-t.Rank)*t.Stride)
	}
	return ws
}

// TestTeams checks the teams and every conversion against membership
// lists built by hand, for every world of 1..12 ranks, every LSA size
// that divides it and every rank.
func TestTeams(t *testing.T) {
	for n := 1; n <= 12; n++ {
		for lsa := 1; lsa <= n; lsa++ {
			if n%lsa != 0 {
				continue
			}
			for rank := 0; rank < n; rank++ {
				checkTeams(t, &DevComm{Rank: rank, NRanks: n, LsaRank: rank % lsa, LsaSize: lsa})
			}
		}
	}
}

func checkTeams(t *testing.T, d *DevComm) {
	t.Helper()
	host := d.Rank / d.LsaSize
	want := map[string][]int{}
	for r := 0; r < d.NRanks; r++ {
		want["world"] = append(want["world"], r)
		if r/d.LsaSize == host {
			want["lsa"] = append(want["lsa"], r)
		}
		if r%d.LsaSize == d.LsaRank {
			want["rail"] = append(want["rail"], r)
		}
	}
	teams := map[string]Team{"world": TeamWorld(d), "lsa": TeamLsa(d), "rail": TeamRail(d)}
	for name, tm := range teams {
		got := teamMembers(d.Rank, tm)
		if !slices.Equal(got, want[name]) {
			t.Fatalf("%+v: team %s %+v has members %v, want %v", d, name, tm, got, want[name])
		}
		if got[tm.Rank] != d.Rank {
			t.Fatalf("%+v: team %s: the caller is not its rank %d", d, name, tm.Rank)
		}
		for r, w := range got {
			if g := TeamRankToWorld(d, tm, r); g != w {
				t.Fatalf("%+v: TeamRankToWorld(%s, %d) = %d, want %d", d, name, r, g, w)
			}
			if g, lw := TeamRankToLsa(d, tm, r), w-host*d.LsaSize; g != lw {
				t.Fatalf("%+v: TeamRankToLsa(%s, %d) = %d, want %d", d, name, r, g, lw)
			}
		}
		for aName, a := range teams {
			for bp, w := range got {
				ai := slices.Index(want[aName], w)
				if is := TeamRankIsMember(a, tm, bp); is != (ai >= 0) {
					t.Fatalf("%+v: TeamRankIsMember(%s, %s, %d) = %v, want %v", d, aName, name, bp, is, ai >= 0)
				}
				if g := TeamRankToTeam(a, tm, bp); g != ai {
					t.Fatalf("%+v: TeamRankToTeam(%s, %s, %d) = %d, want %d", d, aName, name, bp, g, ai)
				}
			}
		}
	}
	if g := TeamInnerFactor(TeamWorld(d), d.LsaSize); g != teams["lsa"] {
		t.Fatalf("%+v: TeamInnerFactor(world, %d) = %+v, want the LSA team %+v", d, d.LsaSize, g, teams["lsa"])
	}
	if g := TeamOuterFactor(TeamWorld(d), d.LsaSize); g != teams["rail"] {
		t.Fatalf("%+v: TeamOuterFactor(world, %d) = %+v, want the rail team %+v", d, d.LsaSize, g, teams["rail"])
	}
	var notLsa []int
	for _, w := range want["world"] {
		if !slices.Contains(want["lsa"], w) {
			notLsa = append(notLsa, w)
		}
	}
	for k := -1; k <= len(notLsa); k++ {
		w := -1
		if k >= 0 && k < len(notLsa) {
			w = notLsa[k]
		}
		if g := TeamRankInDifference(TeamWorld(d), TeamLsa(d), k); g != w {
			t.Fatalf("%+v: TeamRankInDifference(world, lsa, %d) = %d, want %d", d, k, g, w)
		}
	}
}
