package tuning

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gccl/gccl/lib/proto"
)

func TestWriteNCCLCSVGolden(t *testing.T) {
	tab := &Table{Version: 1, Comment: "golden", Rules: []Rule{
		{Coll: AllReduce, Ranks: Range{2, 3}, Hosts: Range{1, 2}, Bytes: Range{0, 65535}, Choice: Choice{Algo: Tree, Proto: proto.LL, NChannels: 2}},
		{Coll: AllReduce, Ranks: Range{4, 4}, Hosts: Range{2, -1}, Bytes: Range{65536, -1}, Choice: Choice{Algo: Ring, Proto: proto.Simple, BuffSize: 8 << 20}},
		{Coll: AllGather, Ranks: anyCount, Hosts: anyCount, Bytes: Range{1024, 1024}, Choice: Choice{Algo: Ring, Proto: proto.LL128, NChannels: 64}},
		{Coll: Broadcast, Ranks: anyCount, Hosts: Range{2, 2}, Bytes: Range{0, -1}, Choice: Choice{Algo: Ring, Proto: proto.Simple}},
	}}
	want := `# NCCL example tuner configuration (ext-tuner/example; set NCCL_TUNER_CONFIG_FILE to this file),
# exported from a gccl tuning table (version 1).
# golden
# Byte ranges are inclusive; max_bytes 18446744073709551615 (SIZE_MAX) is unbounded.
# -1 keeps NCCL's channel count, and matches any nNodes, nRanks, numPipeOps or regBuff.
# Warning: NCCL 2.28's example plugin sets 1 channel on every call it is asked about, matched
# or not, and a -1 keeps that 1 (measured 13-94% slower on 2 H100s): use a plugin that leaves
# the channel count alone unless a rule sets it.
# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff
allreduce,0,65535,tree,ll,2,1,2,-1,-1
allreduce,0,65535,tree,ll,2,2,2,-1,-1
allreduce,0,65535,tree,ll,2,1,3,-1,-1
allreduce,0,65535,tree,ll,2,2,3,-1,-1
# rule 2: buffsize 8388608 left out (NCCL's tuner cannot set a buffer size)
allreduce,65536,18446744073709551615,ring,simple,-1,2,4,-1,-1
allreduce,65536,18446744073709551615,ring,simple,-1,3,4,-1,-1
allreduce,65536,18446744073709551615,ring,simple,-1,4,4,-1,-1
allgather,1024,1024,ring,ll128,64,-1,-1,-1,-1
broadcast,0,18446744073709551615,ring,simple,-1,2,-1,-1,-1
`
	var b bytes.Buffer
	if err := tab.WriteNCCLCSV(&b); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// withoutBuffSize is what NCCL's format keeps of a choice.
func withoutBuffSize(c Choice) Choice {
	c.BuffSize = 0
	return c
}

// sameDecisions compares two tables' lookups at every byte edge and
// midpoint, for every collective, 1..9 ranks and 1..ranks hosts.
func sameDecisions(t *testing.T, want, got *Table, csv string) {
	t.Helper()
	probes := probeBytes(want, got)
	for nRanks := 1; nRanks <= 9; nRanks++ {
		for nHosts := 1; nHosts <= nRanks; nHosts++ {
			sw, sg := want.For(nRanks, nHosts), got.For(nRanks, nHosts)
			for _, c := range Colls() {
				for _, b := range probes {
					cw, okw := sw.Lookup(c, b)
					cg, okg := sg.Lookup(c, b)
					if okw != okg || withoutBuffSize(cw) != cg {
						t.Fatalf("%v, %d ranks, %d hosts, %d B: got %v %v, want %v %v\n%s",
							c, nRanks, nHosts, b, cg, okg, withoutBuffSize(cw), okw, csv)
					}
				}
			}
		}
	}
}

func TestNCCLCSVRoundTrip(t *testing.T) {
	check := func(want *Table) bool {
		t.Helper()
		var b bytes.Buffer
		if err := want.WriteNCCLCSV(&b); err != nil {
			var te *TableError
			if !errors.As(err, &te) || (te.Field != "ranks" && te.Field != "hosts") || te.Rule == 0 {
				t.Fatalf("export failed with %v", err)
			}
			return false
		}
		got, err := ParseNCCLCSV(bytes.NewReader(b.Bytes()), "rt.csv")
		if err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		// OneShot and TwoShot rules are left out: NCCL decides there.
		kept := *want
		kept.Rules = slices.DeleteFunc(slices.Clone(want.Rules), func(r Rule) bool { return r.Choice.Algo.OnBoard() })
		if n := len(want.Rules) - len(kept.Rules); strings.Count(b.String(), "is gccl's own algorithm") != n {
			t.Fatalf("%d OneShot and TwoShot rules, but the export's comments name another count:\n%s", n, b.String())
		}
		sameDecisions(t, &kept, got, b.String())
		return true
	}
	if !check(sampleTable()) {
		t.Fatal("sample table does not export")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	exported := 0
	for range 100 {
		if check(randomTable(rng, 25)) {
			exported++
		}
	}
	if exported == 0 {
		t.Errorf("no random table exports")
	}
	// Mostly tables whose ranges NCCL's format can express.
	exportable := func(r Rule) bool {
		return (r.Ranks.Max != -1 || r.Ranks.Min == 1) && (r.Hosts.Max != -1 || r.Hosts.Min == 1 || r.Ranks.Max != -1)
	}
	for range 200 {
		if !check(randomTable(rng, 25, exportable)) {
			t.Fatal("a table of exportable rules does not export")
		}
	}
}

// nline is one line of NCCL's format, for the reference first-match search.
type nline struct {
	coll                  Coll
	lo, hi                uint64
	algo                  Algo
	proto                 proto.Protocol
	ch, nodes, ranks      int
	hiAsMinus1, shortForm bool
}

func (l nline) String() string {
	hi := strconv.FormatUint(l.hi, 10)
	if l.hiAsMinus1 {
		hi = "-1"
	}
	s := fmt.Sprintf("%s,%d,%s,%s,%s,%d,%d,%d", l.coll, l.lo, hi,
		strings.ToLower(l.algo.String()), strings.ToLower(l.proto.String()), l.ch, l.nodes, l.ranks)
	if !l.shortForm {
		s += ",-1,-1"
	}
	return s
}

// firstMatch is NCCL's example tuner: the first line that matches wins.
func firstMatch(ls []nline, c Coll, nRanks, nHosts int, bytes int64) (Choice, bool) {
	for _, l := range ls {
		if l.coll == c && bytes >= 0 && uint64(bytes) >= l.lo && uint64(bytes) <= l.hi &&
			(l.nodes == -1 || l.nodes == nHosts) && (l.ranks == -1 || l.ranks == nRanks) {
			return Choice{Algo: l.algo, Proto: l.proto, NChannels: max(l.ch, 0)}, true
		}
	}
	return Choice{}, false
}

// Overlapping lines read as NCCL reads them: the first match wins.
func TestParseNCCLCSVFirstMatchWins(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	vals := []uint64{0, 1, 100, 101, 4096, 65536, math.MaxInt64 - 1, math.MaxInt64, math.MaxUint64}
	split, hidden := 0, 0 // files where a line became several rules, or none
	for range 200 {
		var ls []nline
		var text strings.Builder
		text.WriteString("# random\n\n")
		for range 1 + rng.IntN(25) {
			a, b := vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))]
			l := nline{coll: []Coll{AllReduce, AllGather}[rng.IntN(2)], lo: min(a, b), hi: max(a, b),
				algo: Ring, proto: proto.All()[rng.IntN(3)], ch: []int{-1, 1, 8}[rng.IntN(3)],
				nodes: []int{-1, -1, 1, 2, 3}[rng.IntN(5)], ranks: []int{-1, -1, 2, 3, 4, 6}[rng.IntN(6)],
				shortForm: rng.IntN(2) == 0}
			if l.lo == math.MaxUint64 {
				l.lo = 0
			}
			if l.hi == math.MaxUint64 && rng.IntN(2) == 0 {
				l.hiAsMinus1 = true
			}
			if l.coll == AllReduce && rng.IntN(2) == 0 {
				l.algo = Tree
			}
			if l.nodes != -1 && l.ranks != -1 && l.nodes > l.ranks {
				continue // never matches, and gccl refuses it
			}
			ls = append(ls, l)
			fmt.Fprintln(&text, l)
		}
		tab, err := ParseNCCLCSV(strings.NewReader(text.String()), "r.csv")
		if err != nil {
			t.Fatalf("%v\n%s", err, text.String())
		}
		switch {
		case len(tab.Rules) > len(ls):
			split++
		case len(tab.Rules) < len(ls):
			hidden++
		}
		probes := []int64{-1, 0, 1, 2, 99, 100, 101, 102, 4095, 4096, 4097, 65535, 65536, 65537, math.MaxInt64 - 2, math.MaxInt64 - 1, math.MaxInt64}
		for nRanks := 1; nRanks <= 7; nRanks++ {
			for nHosts := 1; nHosts <= nRanks; nHosts++ {
				s := tab.For(nRanks, nHosts)
				for _, c := range []Coll{AllReduce, AllGather, Reduce} {
					for _, b := range probes {
						want, okw := firstMatch(ls, c, nRanks, nHosts, b)
						got, okg := s.Lookup(c, b)
						if okw != okg || want != got {
							t.Fatalf("%v, %d ranks, %d hosts, %d B: got %v %v, want %v %v\n%s",
								c, nRanks, nHosts, b, got, okg, want, okw, text.String())
						}
					}
				}
			}
		}
	}
	if split < 50 || hidden < 5 {
		t.Errorf("%d files split a line and %d hid one: the overlaps are too rare to test much", split, hidden)
	}
}

// The usual NCCL file: one shape first, a catch-all after, and a line the
// earlier ones hide entirely, which adds no rule.
func TestParseNCCLCSVShadowing(t *testing.T) {
	in := "allreduce,0,100,tree,ll,-1,1,4\n" +
		"allreduce,0,1000,ring,simple,2,-1,-1\n" +
		"allreduce,50,60,ring,ll128,-1,1,4\n"
	tab, err := ParseNCCLCSV(strings.NewReader(in), "s.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tab.Rules {
		if r.Choice.Proto == proto.LL128 {
			t.Errorf("the hidden line became rule %+v", r)
		}
	}
	tree := Choice{Algo: Tree, Proto: proto.LL}
	ring := Choice{Algo: Ring, Proto: proto.Simple, NChannels: 2}
	for _, tc := range []struct {
		ranks, hosts int
		bytes        int64
		want         Choice
		ok           bool
	}{
		{4, 1, 55, tree, true}, {4, 1, 100, tree, true}, {4, 1, 101, ring, true}, {4, 2, 55, ring, true},
		{5, 1, 0, ring, true}, {3, 1, 1000, ring, true}, {4, 1, 1001, Choice{}, false},
	} {
		if got, ok := tab.Lookup(AllReduce, tc.ranks, tc.hosts, tc.bytes); got != tc.want || ok != tc.ok {
			t.Errorf("%d ranks %d hosts %d B: %v %v, want %v %v", tc.ranks, tc.hosts, tc.bytes, got, ok, tc.want, tc.ok)
		}
	}
}

// Files written by hand in NCCL's style: 8 columns, spaces, CRLF, "-1" as
// max_bytes, comments.
func TestParseNCCLCSVForms(t *testing.T) {
	in := "# NCCL Tuner Configuration File (CSV Format)\r\n" +
		"\r\n" +
		" allreduce , 0 , 65536 , tree , simple , 2 , 1 , -1 , -1 , -1\r\n" +
		"allgather,0,4294967295,ring,simple,4,2,-1\r\n" +
		"reduce,0,-1,ring,ll,-1,-1,-1,-1\r\n" +
		"  # an indented comment\n"
	tab, err := ParseNCCLCSV(strings.NewReader(in), "forms.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Coll: AllReduce, Ranks: anyCount, Hosts: Range{1, 1}, Bytes: Range{0, 65536}, Choice: Choice{Algo: Tree, Proto: proto.Simple, NChannels: 2}},
		{Coll: AllGather, Ranks: anyCount, Hosts: Range{2, 2}, Bytes: Range{0, 4294967295}, Choice: Choice{Algo: Ring, Proto: proto.Simple, NChannels: 4}},
		{Coll: Reduce, Ranks: anyCount, Hosts: anyCount, Bytes: Range{0, -1}, Choice: Choice{Algo: Ring, Proto: proto.LL}},
	}
	if tab.Version != TableVersion || len(tab.Rules) != len(want) {
		t.Fatalf("got %+v", tab)
	}
	for i := range want {
		if tab.Rules[i] != want[i] {
			t.Errorf("rule %d = %+v, want %+v", i+1, tab.Rules[i], want[i])
		}
	}
}

func TestParseNCCLCSVErrors(t *testing.T) {
	const head = "# header\n\n"
	for _, tc := range []struct {
		name, line string
		want       []string
	}{
		{"too few columns", "allreduce,0,10,ring,ll,-1,-1", []string{"7 columns, want 8 to 10: collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff"}},
		{"too many columns", "allreduce,0,10,ring,ll,-1,-1,-1,-1,-1,-1", []string{"11 columns, want 8 to 10"}},
		{"empty column", "allreduce,0,,ring,ll,-1,-1,-1", []string{`field "max_bytes"`, "empty (NCCL's parser would skip it"}},
		{"unknown collective", "all_reduce,0,10,ring,ll,-1,-1,-1", []string{`field "collective_type"`, `unknown collective "all_reduce"`, "valid, in lower case as NCCL compares them: allreduce, allgather"}},
		{"upper-case collective", "AllReduce,0,10,ring,ll,-1,-1,-1", []string{`field "collective_type"`, `unknown collective "AllReduce"`}},
		{"min not a number", "allreduce,abc,10,ring,ll,-1,-1,-1", []string{`field "min_bytes"`, `"abc" is not a byte count from 0 to 9223372036854775807`}},
		{"min negative", "allreduce,-1,10,ring,ll,-1,-1,-1", []string{`field "min_bytes"`, `"-1" is not a byte count`}},
		{"min too large", "allreduce,9223372036854775808,-1,ring,ll,-1,-1,-1", []string{`field "min_bytes"`, "is not a byte count"}},
		{"max not a number", "allreduce,0,1e6,ring,ll,-1,-1,-1", []string{`field "max_bytes"`, `"1e6" is not a byte count from 0 to 18446744073709551615`}},
		{"max past size_t", "allreduce,0,18446744073709551616,ring,ll,-1,-1,-1", []string{`field "max_bytes"`, "is not a byte count"}},
		{"inverted bytes", "allreduce,100,99,ring,ll,-1,-1,-1", []string{`field "max_bytes"`, "inverted byte range: min_bytes 100 > max_bytes 99"}},
		{"nvls", "allreduce,0,10,nvls,simple,-1,-1,-1", []string{`field "algorithm"`, "gccl does not run nvls (valid: ring, tree)"}},
		{"collnet", "allreduce,0,10,collnet_direct,simple,-1,-1,-1", []string{`field "algorithm"`, "gccl does not run collnet_direct"}},
		{"pat", "allgather,0,10,pat,simple,-1,-1,-1", []string{`field "algorithm"`, "gccl does not run pat"}},
		{"unknown algorithm", "allreduce,0,10,Ring,ll,-1,-1,-1", []string{`field "algorithm"`, `unknown algorithm "Ring" (valid: ring, tree)`}},
		{"unknown protocol", "allreduce,0,10,ring,LL,-1,-1,-1", []string{`field "protocol"`, `unknown protocol "LL" (valid: ll, ll128, simple)`}},
		{"channels zero", "allreduce,0,10,ring,ll,0,-1,-1", []string{`field "channels"`, `"0" is not a channel count: want 1..64, or -1 to keep NCCL's`}},
		{"channels too many", "allreduce,0,10,ring,ll,65,-1,-1", []string{`field "channels"`, `"65" is not a channel count`}},
		{"channels junk", "allreduce,0,10,ring,ll,4x,-1,-1", []string{`field "channels"`, `"4x" is not a channel count`}},
		{"nodes zero", "allreduce,0,10,ring,ll,-1,0,-1", []string{`field "nNodes"`, `"0" is not a count: want 1 or more, or -1 for any`}},
		{"ranks junk", "allreduce,0,10,ring,ll,-1,-1,eight", []string{`field "nRanks"`, `"eight" is not a count`}},
		{"more nodes than ranks", "allreduce,0,10,ring,ll,-1,4,2", []string{`field "nNodes"`, "at least 4 hosts but at most 2 ranks"}},
		{"numPipeOps", "allreduce,0,10,ring,ll,-1,-1,-1,1", []string{`field "numPipeOps"`, `"1" is not supported: gccl matches any numPipeOps, so only -1 is`}},
		{"regBuff", "allreduce,0,10,ring,ll,-1,-1,-1,-1,1", []string{`field "regBuff"`, `"1" is not supported`}},
		{"tree for allgather", "allgather,0,10,tree,ll,-1,-1,-1", []string{`field "algorithm"`, "allgather has no Tree implementation (valid for allgather: Ring, OneShot)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := head + tc.line + "\nallreduce,0,10,ring,ll,-1,-1,-1\n"
			tab, err := ParseNCCLCSV(strings.NewReader(in), "t.csv")
			if err == nil {
				t.Fatalf("accepted %q: %+v", tc.line, tab)
			}
			var te *TableError
			if !errors.As(err, &te) || te.Line != 3 {
				t.Errorf("error %v: want a *TableError at line 3", err)
			}
			for _, w := range append([]string{"t.csv:3:"}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// A line too long to scan.
	_, err := ParseNCCLCSV(strings.NewReader(head+strings.Repeat("x", 2<<20)), "t.csv")
	if err == nil || !strings.HasPrefix(err.Error(), "t.csv:3: ") {
		t.Errorf("huge line: err = %v", err)
	}
}

func TestWriteNCCLCSVErrors(t *testing.T) {
	base := Rule{Coll: AllReduce, Ranks: anyCount, Hosts: anyCount, Bytes: Range{0, 10}, Choice: Choice{Algo: Ring, Proto: proto.LL}}
	with := func(f func(*Rule)) *Table {
		r := base
		f(&r)
		return &Table{Version: 1, Rules: []Rule{{Coll: Reduce, Ranks: anyCount, Hosts: anyCount, Bytes: Range{0, 1}, Choice: base.Choice}, r}}
	}
	for _, tc := range []struct {
		name string
		t    *Table
		want string
	}{
		{"ranks from 4 up", with(func(r *Rule) { r.Ranks = Range{4, -1} }),
			`tuning table: rule 2: field "ranks": range [4,-1] is unbounded above but does not start at 1: NCCL matches one count or any (-1)`},
		{"hosts from 2 up, any ranks", with(func(r *Rule) { r.Hosts = Range{2, -1} }),
			`tuning table: rule 2: field "hosts": range [2,-1] is unbounded above`},
		{"huge rank range", with(func(r *Rule) { r.Ranks = Range{1, 100000} }),
			`tuning table: rule 2: field "ranks": range [1,100000] would need more than 4096 NCCL lines`},
		{"too many pairs", with(func(r *Rule) { r.Ranks = Range{1, 100}; r.Hosts = Range{1, 100} }),
			`tuning table: rule 2: the NCCL export would pass 4096 lines: rank range [1,100] x host range [1,100] is one line per pair`},
		{"invalid", with(func(r *Rule) { r.Bytes = Range{5, 1} }), `tuning table: rule 2: field "bytes": inverted range [5,1]: min > max`},
	} {
		if err := tc.t.WriteNCCLCSV(&bytes.Buffer{}); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := (*Table)(nil).WriteNCCLCSV(&bytes.Buffer{}); err == nil {
		t.Error("nil table exported")
	}
}

// A long comment stays in '#' lines that fit NCCL's 256-byte line buffer,
// cut between runes.
func TestWriteNCCLCSVLongComment(t *testing.T) {
	tab := sampleTable()
	tab.Comment = strings.Repeat("é,", 300) + "\r\nallreduce,0,1,tree,ll,-1,-1,-1"
	var b bytes.Buffer
	if err := tab.WriteNCCLCSV(&b); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if len(l)+1 >= 256 || !utf8.ValidString(l) || strings.ContainsRune(l, '\r') {
			t.Errorf("line %d (%d bytes) would not reach NCCL intact: %q", i+1, len(l), l)
		}
	}
	got, err := ParseNCCLCSV(&b, "c.csv")
	if err != nil {
		t.Fatal(err)
	}
	sameDecisions(t, tab, got, "")
}
