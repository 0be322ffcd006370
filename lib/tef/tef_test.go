package tef

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func nested() *File {
	evs := []Event{
		ProcessName(0, "rank 0"),
		ThreadName(0, 0, "channel 0"),
		Complete("AllReduce", CatOp, 0, 0, 1000, 5000, map[string]any{ArgSeq: 1, ArgBytes: 1024}),
		Complete("send", CatStep, 0, 0, 1100, 1000, map[string]any{ArgPeer: 1}),
		Complete("wait peer head", CatWait, 0, 0, 1200, 500, map[string]any{ArgPeer: 1, ArgOn: "head"}),
		Complete("recv", CatStep, 0, 0, 2100, 2000, map[string]any{ArgPeer: 1}),
		Complete("AllReduce", CatOp, 1, 0, 900, 5200, nil),
	}
	return &File{TraceEvents: evs}
}

func TestValidateAcceptsNesting(t *testing.T) {
	if errs := Validate(nested()); errs != nil {
		t.Fatalf("a well-formed trace: %v", errs)
	}
}

func TestValidateFindsEachBreach(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(f *File)
		want   string
	}{
		{"overlap", func(f *File) { f.TraceEvents[5].Dur = 9000 }, "without nesting"},
		{"backwards", func(f *File) { f.TraceEvents[5].Ts = 1.0 }, "before the track's previous"},
		{"negative dur", func(f *File) { f.TraceEvents[3].Dur = -1 }, "duration >= 0"},
		{"nan ts", func(f *File) { f.TraceEvents[3].Ts = math.NaN() }, "not a finite"},
		{"phase", func(f *File) { f.TraceEvents[3].Ph = "Q" }, "phase \"Q\""},
		{"metadata", func(f *File) { f.TraceEvents[0].Name = "proc_name" }, "metadata \"proc_name\""},
		{"unit", func(f *File) { f.DisplayTimeUnit = "s" }, "displayTimeUnit"},
		{"unended begin", func(f *File) {
			f.TraceEvents = append(f.TraceEvents, Event{Name: "b", Ph: "B", Ts: 10, Pid: 3})
		}, "never ended"},
		{"stray end", func(f *File) {
			f.TraceEvents = append(f.TraceEvents, Event{Name: "b", Ph: "E", Ts: 10, Pid: 4})
		}, "no open begin"},
	}
	for _, c := range cases {
		f := nested()
		c.mutate(f)
		errs := Validate(f)
		if len(errs) == 0 {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%s: %v, want one saying %q", c.name, errs[0], c.want)
		}
	}
}

func TestBeginEndPairs(t *testing.T) {
	f := &File{TraceEvents: []Event{
		{Name: "a", Ph: "B", Ts: 1, Pid: 0},
		{Name: "b", Ph: "B", Ts: 2, Pid: 0},
		{Name: "b", Ph: "E", Ts: 3, Pid: 0},
		{Name: "a", Ph: "E", Ts: 4, Pid: 0},
	}}
	if errs := Validate(f); errs != nil {
		t.Fatal(errs)
	}
	f.TraceEvents[2].Name = "a"
	if errs := Validate(f); errs == nil {
		t.Fatal("E of the wrong name accepted")
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	f := nested()
	f.OtherData = map[string]any{"producer": "test"}
	g := roundTrip(t, f)
	if len(g.TraceEvents) != len(f.TraceEvents) || g.DisplayTimeUnit != "ns" || g.OtherData["producer"] != "test" {
		t.Fatalf("round trip: %+v", g)
	}
	if g.TraceEvents[4].Ts != OnGrid(1.2) || g.TraceEvents[4].Dur != 0.5 || g.TraceEvents[4].Args[ArgOn] != "head" {
		t.Fatalf("event 4 read back as %+v", g.TraceEvents[4])
	}
	if errs := Validate(g); errs != nil {
		t.Fatal(errs)
	}
	arr, err := Read(strings.NewReader(`[{"name":"x","ph":"X","ts":1,"dur":2,"pid":0,"tid":0}]`))
	if err != nil || len(arr.TraceEvents) != 1 {
		t.Fatalf("array format: %v %+v", err, arr)
	}
	for _, bad := range []string{`{}`, `{"traceEvents":3}`, `nope`, ``} {
		if _, err := Read(strings.NewReader(bad)); err == nil {
			t.Errorf("%q read as a trace", bad)
		}
	}
}

func TestSortForTracksMakesNestingValid(t *testing.T) {
	f := nested()
	evs := f.TraceEvents
	// Children first, tracks interleaved: the order a recorder with one
	// buffer per channel might write.
	evs[2], evs[4] = evs[4], evs[2]
	evs[0], evs[6] = evs[6], evs[0]
	if Validate(f) == nil {
		t.Fatal("the shuffled trace should break the track rules")
	}
	SortForTracks(evs)
	if errs := Validate(f); errs != nil {
		t.Fatal(errs)
	}
	if evs[0].Ph != "M" || evs[1].Ph != "M" {
		t.Fatalf("metadata not first: %+v", evs[:2])
	}
}

func TestMerge(t *testing.T) {
	a := &File{TraceEvents: []Event{Complete("op", CatOp, 0, 0, 0, 10, nil)}, OtherData: map[string]any{"process": 0}}
	b := &File{TraceEvents: []Event{Complete("op", CatOp, 1, 0, 5, 10, nil)}, OtherData: map[string]any{"process": 1}}
	m, err := Merge([]*File{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.TraceEvents) != 2 || len(m.OtherData["files"].([]any)) != 2 {
		t.Fatalf("merged %+v", m)
	}
	if _, err := Merge([]*File{a, a}); err == nil || !strings.Contains(err.Error(), "pid 0") {
		t.Fatalf("a rank twice: %v", err)
	}
}

// TestLanes: each lane function's tid reads back as its kind, channel and
// lane, and no two kinds share a tid.
func TestLanes(t *testing.T) {
	seen := map[int]string{}
	check := func(tid int, kind string, ch, lane int) {
		t.Helper()
		k, c, l := TrackOf(tid)
		if k != kind || c != ch || l != lane {
			t.Errorf("TrackOf(%d) = %s %d %d, want %s %d %d", tid, k, c, l, kind, ch, lane)
		}
		if prev, ok := seen[tid]; ok {
			t.Errorf("tid %d is both %s and %s %d/%d", tid, prev, kind, ch, lane)
		}
		seen[tid] = kind
	}
	for l := 0; l < Lanes; l++ {
		check(OpLane(l), TrackRank, -1, l)
		for _, c := range []int{0, 1, 63, 127} {
			check(ProxyLane(c, l), TrackProxy, c, l)
			check(KernelLane(c, l), TrackChannel, c, l)
		}
	}
	if k, _, _ := TrackOf(-5); k != TrackOther {
		t.Errorf("TrackOf(-5) = %s", k)
	}
}

// gridTicks rounds ns*1024/1000 to the nearest integer (halves away from
// zero cannot occur: 125 is odd), without overflow, for any ns whose
// result fits an int64 (|ns| up to 285 years).
func TestGridTicks(t *testing.T) {
	check := func(ns int64) {
		want := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(ns), big.NewInt(128)), big.NewInt(125))
		got := big.NewRat(gridTicks(ns), 1)
		diff := new(big.Rat).Sub(got, want)
		if diff.Abs(diff).Cmp(big.NewRat(1, 2)) > 0 {
			t.Fatalf("gridTicks(%d) = %d, want %s rounded", ns, gridTicks(ns), want.FloatString(3))
		}
	}
	for ns := int64(-3000); ns <= 3000; ns++ {
		check(ns)
	}
	for _, ns := range []int64{1 << 62, -(1 << 62), math.MaxInt64 / 128 * 125, 3400257837622, -3400257837622} {
		check(ns)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		ns := r.Int64() >> (1 + r.IntN(62))
		check(ns)
		check(-ns)
	}
}

// Where one event ends and the next starts at the same nanosecond, a
// reader adding ts and dur in floating point (as a JavaScript viewer
// does) lands exactly on the next ts: for events made by Complete, and
// for another tool's events with nanosecond decimals once written.
func TestGridEndsMeetStarts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, base := range []int64{0, 3400257837622, 86400e9 * 30} {
		ns := base
		var made, decimal File
		for i := range 20000 {
			d := r.Int64N(100000)
			made.TraceEvents = append(made.TraceEvents, Complete("e", CatStep, 0, i%2, ns, d, nil))
			// Decimal microseconds, as NCCL's own plugins write them.
			ts, _ := strconv.ParseFloat(strconv.FormatInt(ns/1000, 10)+"."+fmt.Sprintf("%03d", ns%1000), 64)
			dur := float64(d) / 1e3
			decimal.TraceEvents = append(decimal.TraceEvents, Event{Name: "e", Ph: "X", Ts: ts, Dur: dur, Tid: i % 2})
			ns += d
		}
		files := map[string]*File{"Complete": &made, "decimal, written": &decimal}
		if base > 1e13 {
			// Decimals that large carry float errors near the grid's
			// spacing (an ulp of 2.6e12 us is 4.9e-4 us): only Complete's
			// integer nanoseconds land exactly.
			delete(files, "decimal, written")
		}
		for name, f := range files {
			g := roundTrip(t, f)
			for i := 1; i < len(g.TraceEvents); i++ {
				a, b := g.TraceEvents[i-1], g.TraceEvents[i]
				if a.Ts+a.Dur != b.Ts {
					t.Fatalf("%s, base %d ns: event %d ends at %v, event %d starts at %v", name, base, i-1, a.Ts+a.Dur, i, b.Ts)
				}
			}
		}
	}
}

// roundTrip writes f and reads it back.
func roundTrip(t *testing.T, f *File) *File {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, f); err != nil {
		t.Fatal(err)
	}
	g, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
