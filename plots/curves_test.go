package plots

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/results"
)

func TestParseFields(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Field
		err  string
	}{
		{in: "proto,algo,nch", want: []Field{FieldAlgo, FieldProto, FieldNCh}},
		{in: "channels, Protocol ,ranks", want: []Field{FieldRanks, FieldProto, FieldNCh}},
		{in: "nch,nch", want: []Field{FieldNCh}},
		{in: "proto,colour", err: `unknown field "colour"`},
		{in: " , ", err: "no fields"},
	} {
		got, err := ParseFields(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseFields(%q): error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseFields(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestFilter(t *testing.T) {
	f, err := ParseFilter("coll=allreduce,proto=LL|simple,ranks=4")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    results.Record
		keep bool
	}{
		{rec(8, 1, cfg("Ring", "LL", 1), ranks(4)), true},
		{rec(8, 1, cfg("ring", "Simple", 1), ranks(4)), true},
		{rec(8, 1, cfg("Ring", "LL128", 1), ranks(4)), false},
		{rec(8, 1, cfg("Ring", "LL", 1), ranks(2)), false},
		{rec(8, 1, cfg("Ring", "LL", 1), ranks(4), coll("allgather")), false},
	} {
		if got := f.Keep(c.r); got != c.keep {
			t.Errorf("Keep(%s/%s n=%d %s) = %v", c.r.Algorithm, c.r.Protocol, c.r.NRanks, c.r.Collective, got)
		}
	}
	for _, bad := range []string{"proto", "size=8", "proto="} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("ParseFilter(%q): no error", bad)
		}
	}
}

// Curves group by the fields asked, pool a size by its median, sort by
// group (auto first, channels as numbers) and label by what varies.
func TestBuildCurvesGrouping(t *testing.T) {
	var recs []results.Record
	recs = append(recs, sweep(pow2s(3, 5), 1, cfg("Ring", "LL", 10))...)
	recs = append(recs, sweep(pow2s(3, 5), 2, cfg("Ring", "LL", 2))...)
	recs = append(recs, sweep(pow2s(3, 5), 3, cfg("Tree", "LL", 2))...)
	recs = append(recs, sweep(pow2s(3, 5), 4)...) // auto
	// Three records of one size pool by their median; an in-place record
	// and a size-0 record are left out.
	recs = append(recs, rec(64, 1, cfg("Tree", "Simple", 1)), rec(64, 9, cfg("Tree", "Simple", 1)), rec(64, 2, cfg("Tree", "Simple", 1)),
		rec(64, 100, cfg("Tree", "Simple", 1), inPlace), rec(0, 0, cfg("Tree", "Simple", 1)))

	cs, err := BuildCurves(recs, CurveOptions{Metric: BusBW})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, c := range cs {
		labels = append(labels, c.Label)
	}
	want := []string{"auto", "Ring/LL/2ch", "Ring/LL/10ch", "Tree/LL/2ch", "Tree/Simple/1ch"}
	if !reflect.DeepEqual(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
	last := cs[len(cs)-1]
	if len(last.Points) != 1 || last.Points[0] != (Point{Bytes: 64, Y: 2, N: 3, Us: 10}) {
		t.Errorf("pooled points %+v, want one of 64 B, median 2 of 3", last.Points)
	}
	if len(last.recs) != 3 { // what a ModelOf is given to find its model
		t.Errorf("the curve holds %d records, want the 3 pooled", len(last.recs))
	}
	ring := cs[1]
	wantPts := []Point{{8, 2 * 8.0 / 1024, 1, 5.008, nil}, {16, 2 * 16.0 / 1024, 1, 5.016, nil}, {32, 2 * 32.0 / 1024, 1, 5.032, nil}}
	if !reflect.DeepEqual(ring.Points, wantPts) {
		t.Errorf("points %+v, want %+v", ring.Points, wantPts)
	}

	// Grouped by protocol alone, the LL curves merge; the label names only
	// the protocol, and its records are of several configurations.
	cs, err = BuildCurves(recs, CurveOptions{Metric: BusBW, By: []Field{FieldProto}})
	if err != nil {
		t.Fatal(err)
	}
	labels = nil
	for _, c := range cs {
		labels = append(labels, c.Label)
	}
	if want := []string{"auto", "LL", "Simple"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("by proto: labels %q, want %q", labels, want)
	}
	type config struct {
		algo string
		nch  int
	}
	configs := map[config]bool{}
	for _, r := range cs[1].recs {
		configs[config{r.Algorithm, r.Channels}] = true
	}
	if len(configs) != 3 {
		t.Errorf("LL curve holds records of %d configurations, want 3: %v", len(configs), configs)
	}
	if got := cs[1].Points[0]; got.N != 3 || got.Y != 2*8.0/1024 {
		t.Errorf("LL at 8 B: %+v, want the median of 3", got)
	}
}

// Labels put the shape before the configuration and the rest after it;
// one curve is labelled by its configuration.
func TestLabels(t *testing.T) {
	recs := append(sweep(pow2s(3, 4), 1, cfg("Ring", "LL", 1), ranks(2)), sweep(pow2s(3, 4), 1, cfg("Ring", "Simple", 1), ranks(4), func(r *results.Record) { r.Backend = "nccl" })...)
	cs, err := BuildCurves(recs, CurveOptions{Metric: BusBW})
	if err != nil {
		t.Fatal(err)
	}
	if cs[0].Label != "2 ranks LL embedded" || cs[1].Label != "4 ranks Simple nccl" {
		t.Errorf("labels %q, %q", cs[0].Label, cs[1].Label)
	}
	cs, _ = BuildCurves(sweep(pow2s(3, 4), 1, cfg("Tree", "LL128", 2)), CurveOptions{Metric: BusBW})
	if cs[0].Label != "Tree/LL128/2ch" {
		t.Errorf("one curve: label %q", cs[0].Label)
	}
	cs, _ = BuildCurves(sweep(pow2s(3, 4), 1), CurveOptions{Metric: BusBW})
	if cs[0].Label != "auto" {
		t.Errorf("one auto curve: label %q", cs[0].Label)
	}
}

func TestMetrics(t *testing.T) {
	r := rec(1024, 4, func(r *results.Record) {
		r.AlgBw, r.TimeUs, r.MedianUs, r.RefCopyGBps = 2, 10, 5, 8
	})
	for _, c := range []struct {
		m      Metric
		median bool
		want   float64
	}{
		{BusBW, false, 4}, {AlgBW, false, 2}, {Time, false, 10}, {BusBWNorm, false, 0.5},
		// Median times: 5 us instead of 10, so bandwidths double.
		{BusBW, true, 8}, {AlgBW, true, 4}, {Time, true, 5}, {BusBWNorm, true, 1},
	} {
		cs, err := BuildCurves([]results.Record{r}, CurveOptions{Metric: c.m, Median: c.median})
		if err != nil {
			t.Fatalf("%v: %v", c.m, err)
		}
		if got := cs[0].Points[0].Y; math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%v median=%v: %v, want %v", c.m, c.median, got, c.want)
		}
	}
	for _, s := range []string{"busbw", "algbw", "time", "norm"} {
		if m, err := ParseMetric(s); err != nil || m.String() != s {
			t.Errorf("ParseMetric(%q) = %v, %v", s, m, err)
		}
	}
}

// Nothing to plot says why.
func TestBuildCurvesErrors(t *testing.T) {
	nccl := rec(8, 1, func(r *results.Record) { r.RefCopyGBps = 0 })
	for _, c := range []struct {
		recs []results.Record
		o    CurveOptions
		want string
	}{
		{nil, CurveOptions{}, "no records"},
		{[]results.Record{rec(8, 1, inPlace)}, CurveOptions{}, "out-of-place"},
		{[]results.Record{nccl}, CurveOptions{Metric: BusBWNorm}, "ref_copy_gbps"},
		{[]results.Record{rec(8, 1, timeUs(0))}, CurveOptions{Metric: Time}, "has a time"},
	} {
		_, err := BuildCurves(c.recs, c.o)
		if !errors.Is(err, ErrNoPoints) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want ErrNoPoints saying %q", c.o.Metric, err, c.want)
		}
	}
	cs, err := BuildCurves([]results.Record{rec(8, 1, inPlace)}, CurveOptions{Placement: results.InPlace})
	if err != nil || len(cs) != 1 {
		t.Errorf("in-place curves: %v, %v", cs, err)
	}
}

func TestTitle(t *testing.T) {
	one := sweep(pow2s(3, 4), 1)
	if got, want := Title(one), "allreduce, 2 ranks, vm (embedded), 2026-11-21"; got != want {
		t.Errorf("Title = %q, want %q", got, want)
	}
	mixed := append(one, rec(8, 1, ranks(4), coll("allgather"), func(r *results.Record) {
		r.NHosts, r.Host, r.Backend, r.Timestamp = 2, "", "nccl", r.Timestamp.AddDate(0, 0, 1)
	}))
	if got, want := Title(mixed), "allgather+allreduce, 2,4 ranks, 1,2 hosts, vm (embedded+nccl), 2026-11-21..2026-11-22"; got != want {
		t.Errorf("Title = %q, want %q", got, want)
	}
	bare := rec(8, 1, func(r *results.Record) { r.Timestamp, r.Host = time.Time{}, "" })
	if got, want := Title([]results.Record{bare}), "allreduce, 2 ranks, embedded"; got != want {
		t.Errorf("Title = %q, want %q", got, want)
	}
}
