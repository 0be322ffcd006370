package tuning

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/proto"
)

// tableDoc builds a table file with one rule per line: rule i (1-based)
// starts on line i+2.
func tableDoc(rules ...string) string {
	return "{\"version\": 1,\n\"rules\": [\n" + strings.Join(rules, ",\n") + "\n]}\n"
}

// Every load error names the file, the line, the rule and the field.
func TestParseTableErrors(t *testing.T) {
	const ok1 = `{"coll":"allreduce","ranks":[2,8],"hosts":[1,1],"bytes":[0,65535],"algo":"Tree","proto":"LL","channels":2}`
	// rule builds a valid rule line plus one field (not coll, bytes, algo or proto).
	rule := func(field, value string) string {
		return `{"coll":"allreduce","bytes":[0,100],"algo":"Ring","proto":"Simple","` + field + `":` + value + `}`
	}
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"syntax", "{\"version\": 1,\n\"rules\": [\n{\"coll\": }\n]}", []string{"t.json:3:", "not valid JSON", "invalid character '}'"}},
		{"empty", "", []string{"t.json:1:", "not valid JSON", "unexpected end"}},
		{"truncated", "{\"version\": 1,\n\"rules\": [\n", []string{"t.json:3:", "not valid JSON"}},
		{"trailing data", "{\"version\": 1, \"rules\": []}\n{}", []string{"t.json:2:", "not valid JSON"}},
		{"not an object", `[{"version":1}]`, []string{"t.json:1:", "a tuning table is a JSON object"}},
		{"unknown top field", "{\"version\": 1,\n\"rules\": [],\n\"rulez\": []}", []string{"t.json:3:", `field "rulez"`, "unknown field (valid: version, comment, rules)"}},
		{"duplicate top field", "{\"version\": 1,\n\"version\": 1, \"rules\": []}", []string{"t.json:2:", `field "version"`, "duplicate"}},
		{"missing version", `{"rules": []}`, []string{"t.json:1:", `field "version"`, "missing", "valid versions: 1"}},
		{"unsupported version", "{\"rules\": [],\n \"version\": 2}", []string{"t.json:2:", `field "version"`, "version 2 is not supported (valid versions: 1)"}},
		{"version as string", `{"version": "1", "rules": []}`, []string{`field "version"`, "want an integer, got a string", "valid versions: 1"}},
		{"version as float", `{"version": 1.0, "rules": []}`, []string{`field "version"`, "want an integer, got 1.0"}},
		{"missing rules", `{"version": 1}`, []string{"t.json:1:", `field "rules"`, "missing", "array of rule objects"}},
		{"rules not an array", "{\"version\": 1,\n \"rules\": {}}", []string{"t.json:2:", `field "rules"`, "want an array of rule objects, got an object"}},
		{"rules null", `{"version": 1, "rules": null}`, []string{`field "rules"`, "got null"}},
		{"comment not a string", `{"version": 1, "comment": 5, "rules": []}`, []string{`field "comment"`, "want a string, got a number"}},
		{"rule not an object", tableDoc(ok1, `[1,2]`), []string{"t.json:4:", "rule 2", "want a rule object", "got an array"}},
		{"unknown rule field", tableDoc(ok1, rule("algorithm", `"Ring"`)), []string{"t.json:4:", "rule 2", `field "algorithm"`, "unknown field (valid: coll, ranks, hosts, bytes, algo, proto, channels, buffsize)"}},
		{"duplicate rule field", tableDoc(rule("bytes", "[0,5]")), []string{"t.json:3:", "rule 1", `field "bytes"`, "duplicate"}},
		{"missing coll", tableDoc(`{"bytes":[0,1],"algo":"Ring","proto":"LL"}`), []string{"t.json:3:", "rule 1", `field "coll"`, "missing"}},
		{"missing bytes", tableDoc(`{"coll":"reduce","algo":"Ring","proto":"LL"}`), []string{"rule 1", `field "bytes"`, "missing"}},
		{"missing algo", tableDoc(`{"coll":"reduce","bytes":[0,1],"proto":"LL"}`), []string{"rule 1", `field "algo"`, "missing"}},
		{"missing proto", tableDoc(`{"coll":"reduce","bytes":[0,1],"algo":"Ring"}`), []string{"rule 1", `field "proto"`, "missing"}},
		{"unknown coll", tableDoc(ok1, ok1, `{"coll":"allreduc","bytes":[0,1],"algo":"Ring","proto":"LL"}`),
			[]string{"t.json:5:", "rule 3", `field "coll"`, `unknown collective "allreduc"`, "valid: allreduce, allgather, reducescatter, broadcast, reduce"}},
		{"coll not a string", tableDoc(`{"coll":0,"bytes":[0,1],"algo":"Ring","proto":"LL"}`), []string{"rule 1", `field "coll"`, "want a string, got a number"}},
		{"unknown algo", tableDoc(`{"coll":"reduce","bytes":[0,1],"algo":"nvls","proto":"LL"}`), []string{"t.json:3:", "rule 1", `field "algo"`, `unknown algorithm "nvls"`, "valid: Ring, Tree"}},
		{"unknown proto", tableDoc(`{"coll":"reduce","bytes":[0,1],"algo":"Ring","proto":"LL64"}`), []string{"rule 1", `field "proto"`, `unknown protocol "LL64"`, "valid: LL, LL128, Simple"}},
		{"range of one", tableDoc(rule("ranks", "[4]")), []string{"rule 1", `field "ranks"`, "want [min,max], two integers (max -1 = unbounded), got [4]"}},
		{"range of three", tableDoc(rule("hosts", "[1,2,3]")), []string{"rule 1", `field "hosts"`, "want [min,max]"}},
		{"range as string", tableDoc(`{"coll":"reduce","bytes":"0-100","algo":"Ring","proto":"LL"}`), []string{`field "bytes"`, "want [min,max]", `got "0-100"`}},
		{"range of floats", tableDoc(`{"coll":"reduce","bytes":[0.5,100],"algo":"Ring","proto":"LL"}`), []string{`field "bytes"`, "want [min,max]"}},
		{"range with null", tableDoc(`{"coll":"reduce","bytes":[0,null],"algo":"Ring","proto":"LL"}`), []string{`field "bytes"`, "want [min,max]"}},
		{"inverted bytes", tableDoc(ok1, `{"coll":"reduce","bytes":[100,99],"algo":"Ring","proto":"LL"}`), []string{"t.json:4:", "rule 2", `field "bytes"`, "inverted range [100,99]: min > max"}},
		{"inverted ranks", tableDoc(rule("ranks", "[8,2]")), []string{"rule 1", `field "ranks"`, "inverted range [8,2]"}},
		{"zero ranks", tableDoc(rule("ranks", "[0,8]")), []string{"rule 1", `field "ranks"`, "min 0 is below 1"}},
		{"negative hosts", tableDoc(rule("hosts", "[-1,-1]")), []string{"rule 1", `field "hosts"`, "min -1 is below 1"}},
		{"negative bytes", tableDoc(`{"coll":"reduce","bytes":[-1,100],"algo":"Ring","proto":"LL"}`), []string{`field "bytes"`, "min -1 is below 0"}},
		{"bad max", tableDoc(`{"coll":"reduce","bytes":[0,-2],"algo":"Ring","proto":"LL"}`), []string{`field "bytes"`, "max -2 is invalid (use -1 for unbounded)"}},
		{"more hosts than ranks", tableDoc(`{"coll":"reduce","ranks":[1,4],"hosts":[5,-1],"bytes":[0,1],"algo":"Ring","proto":"LL"}`),
			[]string{"rule 1", `field "hosts"`, "at least 5 hosts but at most 4 ranks"}},
		{"channels too many", tableDoc(rule("channels", "65")), []string{"rule 1", `field "channels"`, "65 is out of range: want 1..64, or 0 to let the stack choose"}},
		{"channels negative", tableDoc(rule("channels", "-1")), []string{`field "channels"`, "-1 is out of range"}},
		{"channels huge", tableDoc(rule("channels", "10000000000")), []string{`field "channels"`, "10000000000 is out of range"}},
		{"channels float", tableDoc(rule("channels", "2.5")), []string{`field "channels"`, "want an integer, got 2.5"}},
		{"buffsize for LL", tableDoc(`{"coll":"reduce","bytes":[0,1],"algo":"Ring","proto":"LL","buffsize":1000}`),
			[]string{"rule 1", `field "buffsize"`, "LL buffer size 1000 is invalid", "or 0 to keep the communicator's"}},
		{"buffsize negative", tableDoc(rule("buffsize", "-4096")), []string{`field "buffsize"`, "Simple buffer size -4096 is invalid"}},
		{"tree for allgather", tableDoc(ok1, `{"coll":"allgather","bytes":[0,1],"algo":"tree","proto":"LL"}`),
			[]string{"t.json:4:", "rule 2", `field "algo"`, "allgather has no Tree implementation (valid for allgather: Ring, OneShot)"}},
		{"overlap", tableDoc(
			`{"coll":"allreduce","ranks":[2,8],"bytes":[0,1000],"algo":"Ring","proto":"LL"}`,
			`{"coll":"allgather","ranks":[2,8],"bytes":[0,1000],"algo":"Ring","proto":"LL"}`,
			`{"coll":"allreduce","ranks":[8,16],"hosts":[2,2],"bytes":[1000,2000],"algo":"Ring","proto":"Simple"}`),
			[]string{"t.json:5:", "rule 3", "overlaps rule 1 (line 3)", "both match allreduce with ranks [8,8], hosts [2,2], bytes [1000,1000]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := ParseTable([]byte(tc.in), "t.json")
			if err == nil {
				t.Fatalf("ParseTable accepted %s: %+v", tc.in, tab)
			}
			var te *TableError
			if !errors.As(err, &te) {
				t.Errorf("error %v is a %T, want *TableError", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// The line of a rule is where its object starts, however it is laid out.
func TestParseTableRuleLine(t *testing.T) {
	in := `{
  "version": 1,
  "rules": [
    {"coll": "reduce", "bytes": [0, 10], "algo": "Ring", "proto": "LL"},

    {
      "coll": "reduce",
      "bytes": [5, 20],
      "algo": "Ring",
      "proto": "LL"
    }
  ]
}`
	_, err := ParseTable([]byte(in), "multi.json")
	want := "multi.json:6: rule 2: overlaps rule 1 (line 4)"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v, want prefix %q", err, want)
	}
	var te *TableError
	if !errors.As(err, &te) || te.Line != 6 || te.Rule != 2 || te.File != "multi.json" {
		t.Errorf("TableError = %+v, want line 6, rule 2, file multi.json", te)
	}
}

// Rules whose ranges meet only where hosts would outnumber ranks do not
// overlap: no communicator has that shape.
func TestParseTableNoOverlapWhereImpossible(t *testing.T) {
	in := tableDoc(
		`{"coll":"reduce","ranks":[1,2],"bytes":[0,10],"algo":"Ring","proto":"LL"}`,
		`{"coll":"reduce","hosts":[3,-1],"bytes":[0,10],"algo":"Ring","proto":"Simple"}`)
	tab, err := ParseTable([]byte(in), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := tab.Lookup(Reduce, 2, 2, 5); !ok || c.Proto != proto.LL {
		t.Errorf("2 ranks on 2 hosts: %v %v, want LL", c, ok)
	}
	if c, ok := tab.Lookup(Reduce, 3, 3, 5); !ok || c.Proto != proto.Simple {
		t.Errorf("3 ranks on 3 hosts: %v %v, want Simple", c, ok)
	}
}

func TestParseTableDefaultsAndNames(t *testing.T) {
	in := `{"version":1,"rules":[{"coll":"All_Reduce","bytes":[0,-1],"algo":"tree","proto":"ll128"}]}`
	tab, err := ParseTable([]byte(in), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	want := &Table{Version: 1, Rules: []Rule{{Coll: AllReduce, Ranks: Range{1, -1}, Hosts: Range{1, -1}, Bytes: Range{0, -1},
		Choice: Choice{Algo: Tree, Proto: proto.LL128}}}}
	if !reflect.DeepEqual(tab, want) {
		t.Errorf("got %+v, want %+v", tab, want)
	}
}

func TestValidateBuiltInCode(t *testing.T) {
	good := Rule{Coll: Reduce, Ranks: anyCount, Hosts: anyCount, Bytes: Range{0, 10}, Choice: Choice{Algo: Ring, Proto: proto.LL}}
	with := func(f func(*Rule)) *Table {
		r := good
		f(&r)
		return &Table{Version: TableVersion, Rules: []Rule{good, r}}
	}
	for _, tc := range []struct {
		name string
		t    *Table
		want string
	}{
		{"version", &Table{}, `tuning table: field "version": version 0 is not supported (valid versions: 1)`},
		{"coll", with(func(r *Rule) { r.Coll = NumColls }), `tuning table: rule 2: field "coll": unknown collective Coll(5) (valid: allreduce, allgather, reducescatter, broadcast, reduce)`},
		{"algo", with(func(r *Rule) { r.Choice.Algo = -1 }), `tuning table: rule 2: field "algo": unknown algorithm Algo(-1) (valid: Ring, Tree, OneShot, TwoShot)`},
		{"proto", with(func(r *Rule) { r.Choice.Proto = proto.NumProtocols }), `tuning table: rule 2: field "proto": unknown protocol Protocol(3) (valid: LL, LL128, Simple)`},
		{"zero range", with(func(r *Rule) { r.Ranks = Range{} }), `tuning table: rule 2: field "ranks": range [0,0]: min 0 is below 1`},
		{"overlap", with(func(r *Rule) { r.Bytes = Range{10, 10} }), `tuning table: rule 2: overlaps rule 1: both match reduce with ranks [1,-1], hosts [1,-1], bytes [10,10]`},
	} {
		err := tc.t.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
		if err := tc.t.WriteJSON(&bytes.Buffer{}); err == nil {
			t.Errorf("%s: WriteJSON wrote an invalid table", tc.name)
		}
	}
	if err := (*Table)(nil).Validate(); err != nil {
		t.Errorf("nil table: %v", err)
	}
	if err := (*Table)(nil).WriteJSON(&bytes.Buffer{}); err == nil {
		t.Errorf("WriteJSON of a nil table succeeded")
	}
}

// sampleTable has a rule of every kind: bounded, exact and unbounded ranges,
// both algorithms, every protocol, a channel count, a buffer size.
func sampleTable() *Table {
	return &Table{Version: TableVersion, Comment: `measured on "hostA" <2x8 ranks> & friends` + "\nsecond line", Rules: []Rule{
		{Coll: AllReduce, Ranks: Range{2, 8}, Hosts: Range{1, 1}, Bytes: Range{0, 65535}, Choice: Choice{Algo: Tree, Proto: proto.LL, NChannels: 2}},
		{Coll: AllReduce, Ranks: Range{2, 8}, Hosts: Range{1, 1}, Bytes: Range{65536, -1}, Choice: Choice{Algo: Ring, Proto: proto.Simple, BuffSize: 8 << 20}},
		{Coll: AllReduce, Ranks: Range{4, 6}, Hosts: Range{2, -1}, Bytes: Range{0, 1 << 20}, Choice: Choice{Algo: Tree, Proto: proto.LL128, NChannels: 4}},
		{Coll: AllGather, Ranks: anyCount, Hosts: anyCount, Bytes: Range{1024, 1024}, Choice: Choice{Algo: Ring, Proto: proto.LL128, NChannels: 64}},
		{Coll: ReduceScatter, Ranks: Range{3, 3}, Hosts: anyCount, Bytes: Range{0, 4095}, Choice: Choice{Algo: Ring, Proto: proto.LL, BuffSize: 64 << 10}},
		{Coll: Broadcast, Ranks: anyCount, Hosts: Range{2, 2}, Bytes: Range{100, 200}, Choice: Choice{Algo: Ring, Proto: proto.Simple, NChannels: 1}},
		{Coll: Reduce, Ranks: Range{1, 9}, Hosts: Range{1, 3}, Bytes: Range{7, 1 << 30}, Choice: Choice{Algo: Ring, Proto: proto.LL}},
	}}
}

func TestJSONRoundTrip(t *testing.T) {
	want := sampleTable()
	var b bytes.Buffer
	if err := want.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	got, err := ParseTable(b.Bytes(), "rt.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the table:\n got %+v\nwant %+v\n%s", got, want, b.String())
	}
	// One rule per line, after the version, comment and "rules" lines.
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if n := len(lines); n != 4+len(want.Rules)+2 {
		t.Errorf("%d lines for %d rules:\n%s", n, len(want.Rules), b.String())
	}
	if !strings.Contains(b.String(), `<2x8 ranks> & friends`) {
		t.Errorf("comment HTML-escaped:\n%s", b.String())
	}

	// Random tables too.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		want := randomTable(rng, 30)
		b.Reset()
		if err := want.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		got, err := ParseTable(b.Bytes(), "rt.json")
		if err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip changed the table:\n got %+v\nwant %+v", got, want)
		}
	}
}

func TestWriteJSONFormat(t *testing.T) {
	tab := &Table{Version: 1, Comment: "x", Rules: []Rule{
		{Coll: AllReduce, Ranks: Range{2, 8}, Hosts: Range{1, 1}, Bytes: Range{0, 65535}, Choice: Choice{Algo: Tree, Proto: proto.LL, NChannels: 2}},
		{Coll: Reduce, Ranks: anyCount, Hosts: anyCount, Bytes: Range{0, -1}, Choice: Choice{Algo: Ring, Proto: proto.Simple, BuffSize: 1 << 20}},
	}}
	want := `{
  "version": 1,
  "comment": "x",
  "rules": [
    {"coll":"allreduce","ranks":[2,8],"hosts":[1,1],"bytes":[0,65535],"algo":"Tree","proto":"LL","channels":2},
    {"coll":"reduce","ranks":[1,-1],"hosts":[1,-1],"bytes":[0,-1],"algo":"Ring","proto":"Simple","channels":0,"buffsize":1048576}
  ]
}
`
	var b bytes.Buffer
	if err := tab.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := (&Table{Version: 1}).WriteJSON(&b); err != nil || b.String() != "{\n  \"version\": 1,\n  \"rules\": []\n}\n" {
		t.Errorf("empty table: %v\n%s", err, b.String())
	}
	if _, err := ParseTable(b.Bytes(), "empty.json"); err != nil {
		t.Errorf("empty table does not load: %v", err)
	}
}

func TestLoadTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tuning.json")
	var b bytes.Buffer
	if err := sampleTable().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadTable(path)
	if err != nil || !reflect.DeepEqual(got, sampleTable()) {
		t.Errorf("LoadTable = %+v, %v", got, err)
	}
	if _, err := LoadTable(path + ".missing"); err == nil || !strings.Contains(err.Error(), "tuning.json.missing") {
		t.Errorf("missing file: err = %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(tableDoc(`{"coll":"reduce"}`)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTable(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":3: rule 1") {
		t.Errorf("bad file: err = %v", err)
	}
}

// randomRange draws a range of counts (lo 1) or sizes (lo 0) from a few
// interesting values, so that random rules meet at their edges.
func randomRange(rng *rand.Rand, lo int64, vals []int64) Range {
	switch rng.IntN(6) {
	case 0:
		return Range{lo, -1}
	case 1:
		v := vals[rng.IntN(len(vals))]
		return Range{v, v}
	case 2:
		return Range{vals[rng.IntN(len(vals))], -1}
	default:
		a, b := vals[rng.IntN(len(vals))], vals[rng.IntN(len(vals))]
		return Range{min(a, b), max(a, b)}
	}
}

var (
	countVals = []int64{1, 2, 3, 4, 5, 8, 9}
	byteVals  = []int64{0, 1, 7, 8, 100, 1023, 1024, 65535, 65536, 1 << 20, math.MaxInt64 - 1, math.MaxInt64}
)

// randomRule draws a rule that passes check.
func randomRule(rng *rand.Rand) Rule {
	for {
		r := Rule{
			Coll:  Colls()[rng.IntN(int(NumColls))],
			Ranks: randomRange(rng, 1, countVals),
			Hosts: randomRange(rng, 1, countVals),
			Bytes: randomRange(rng, 0, byteVals),
			Choice: Choice{Algo: Algos()[rng.IntN(int(NumAlgos))], Proto: proto.All()[rng.IntN(int(proto.NumProtocols))],
				NChannels: rng.IntN(3)},
		}
		if rng.IntN(4) == 0 {
			r.Choice.BuffSize = 64 << 10
		}
		if _, err := r.check(); err == nil {
			return r
		}
	}
}

// randomTable draws up to n rules, keeping those that overlap no earlier one
// and that every keep function (if any) accepts.
func randomTable(rng *rand.Rand, n int, keep ...func(Rule) bool) *Table {
	t := &Table{Version: TableVersion, Rules: []Rule{}}
next:
	for range n {
		r := randomRule(rng)
		for _, k := range keep {
			if !k(r) {
				continue next
			}
		}
		t.Rules = append(t.Rules, r)
		if t.Validate() != nil {
			t.Rules = t.Rules[:len(t.Rules)-1]
		}
	}
	return t
}

// probeBytes lists every edge of the tables' byte ranges, one either side,
// and midpoints.
func probeBytes(ts ...*Table) []int64 {
	ps := []int64{-1, 0, 1, math.MaxInt64}
	for _, t := range ts {
		for _, r := range t.Rules {
			lo, hi := r.Bytes.Min, r.Bytes.hi()
			ps = append(ps, lo, lo+lo/2+(hi-lo)/2, hi)
			if lo > 0 {
				ps = append(ps, lo-1)
			}
			if hi < math.MaxInt64 {
				ps = append(ps, hi+1)
			}
		}
	}
	return ps
}

// linearLookup is the reference: scan every rule.
func linearLookup(t *Table, c Coll, nRanks, nHosts int, bytes int64) (Choice, int) {
	var found Choice
	n := 0
	for _, r := range t.Rules {
		if r.Coll == c && r.Ranks.Contains(int64(nRanks)) && r.Hosts.Contains(int64(nHosts)) && r.Bytes.Contains(bytes) {
			found = r.Choice
			n++
		}
	}
	return found, n
}

func TestSelectorMatchesLinearScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	hits := 0
	for range 200 {
		tab := randomTable(rng, 40)
		probes := probeBytes(tab)
		for nRanks := 1; nRanks <= 11; nRanks++ {
			for nHosts := 1; nHosts <= nRanks; nHosts++ {
				s := tab.For(nRanks, nHosts)
				for _, c := range Colls() {
					for _, b := range probes {
						want, n := linearLookup(tab, c, nRanks, nHosts, b)
						if n > 1 {
							t.Fatalf("valid table has %d rules for %v %d ranks %d hosts %d bytes: %+v", n, c, nRanks, nHosts, b, tab)
						}
						got, ok := s.Lookup(c, b)
						if ok != (n == 1) || got != want {
							t.Fatalf("Lookup(%v, %d ranks, %d hosts, %d B) = %v %v, want %v %v\ntable %+v",
								c, nRanks, nHosts, b, got, ok, want, n == 1, tab)
						}
						hits += n
					}
				}
			}
		}
	}
	if hits < 10000 {
		t.Errorf("only %d probes hit a rule: the random tables are too sparse to test much", hits)
	}
}

func TestLookupNilAndOutOfRange(t *testing.T) {
	var nt *Table
	if s := nt.For(4, 1); s != nil {
		t.Errorf("nil table gave selector %v", s)
	}
	if c, ok := nt.Lookup(AllReduce, 4, 1, 100); ok || c != (Choice{}) {
		t.Errorf("nil table: %v %v", c, ok)
	}
	var ns *Selector
	if _, ok := ns.Lookup(AllReduce, 100); ok {
		t.Errorf("nil selector matched")
	}
	s := sampleTable().For(4, 1)
	for _, c := range []Coll{-1, NumColls} {
		if _, ok := s.Lookup(c, 100); ok {
			t.Errorf("collective %v matched", c)
		}
	}
	if _, ok := s.Lookup(AllReduce, -1); ok {
		t.Errorf("negative size matched")
	}
	if c, ok := s.Lookup(AllReduce, 65536); !ok || c.Proto != proto.Simple {
		t.Errorf("Lookup(allreduce, 64 KiB) = %v %v", c, ok)
	}
}

// A lookup runs per operation: it must not allocate.
func TestLookupDoesNotAllocate(t *testing.T) {
	s := sampleTable().For(4, 1)
	n := testing.AllocsPerRun(100, func() {
		s.Lookup(AllReduce, 1000)
		s.Lookup(Broadcast, 5)
	})
	if n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}
