package tuner

import (
	"errors"
	"math"
	"testing"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

// at builds a series of k from (bytes, us) pairs.
func at(k Key, pts ...float64) Series {
	s := Series{Key: k}
	for i := 0; i+1 < len(pts); i += 2 {
		s.Samples = append(s.Samples, Sample{Bytes: int64(pts[i]), Us: pts[i+1], Times: []float64{pts[i+1]}})
	}
	return s
}

func rule(from, to int64, a tuning.Algo, p proto.Protocol, nch int) tuning.Rule {
	return tuning.Rule{Coll: tuning.AllReduce, Ranks: tuning.Range{Min: 2, Max: 2}, Hosts: tuning.Range{Min: 1, Max: 1},
		Bytes: tuning.Range{Min: from, Max: to}, Choice: tuning.Choice{Algo: a, Proto: p, NChannels: nch}}
}

func table(rules ...tuning.Rule) *tuning.Table {
	return &tuning.Table{Version: tuning.TableVersion, Rules: rules}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// A table built from noiseless curves picks the best at every measured
// size: no regret.
func TestValidateBestTableHasNoRegret(t *testing.T) {
	sz := sizes4x()
	a := series(ringLL, sz, ab(2, 1))
	b := series(ringSimple, sz, ab(10, 4))
	tab, _, err := BuildTable([]Series{a, b}, fitAll(t, a, b), TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Validate(tab, []Series{a, b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Table.Points != len(sz) || rep.Table.Geomean != 0 || rep.Table.Max != 0 || rep.Table.Unpriced != 0 {
		t.Errorf("table regrets %+v, want 0 over %d points", rep.Table, len(sz))
	}
	// No auto series and no default picker: the default is unpriced.
	if rep.Default.Points != 0 || rep.Default.Unpriced != len(sz) || !math.IsNaN(rep.Default.Geomean) {
		t.Errorf("default regrets %+v, want every point unpriced", rep.Default)
	}
	if len(rep.Shapes) != 1 || rep.Shapes[0].Shape != ar2 {
		t.Errorf("shapes %+v", rep.Shapes)
	}
}

// Two sizes; a table that always picks Ring/Simple; the default from the
// auto series.
//
//	bytes  Ring/LL  Ring/Simple  auto   best
//	100    10       11           12     10
//	1000   20       30           20     20
func TestValidateRegrets(t *testing.T) {
	ss := []Series{
		at(ringLL, 100, 10, 1000, 20),
		at(ringSimple, 100, 11, 1000, 30),
		at(autoKey, 100, 12, 1000, 20),
	}
	rep, err := Validate(table(rule(0, -1, tuning.Ring, proto.Simple, 1)), ss, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := math.Sqrt(1.1*1.5) - 1; !near(rep.Table.Geomean, g) || !near(rep.Table.Max, 0.5) || rep.Table.Points != 2 {
		t.Errorf("table regrets %+v, want geomean %v, max 0.5 over 2 points", rep.Table, g)
	}
	if rep.Table.Worst.Bytes != 1000 {
		t.Errorf("worst table point at %d bytes, want 1000", rep.Table.Worst.Bytes)
	}
	if g := math.Sqrt(1.2) - 1; !near(rep.Default.Geomean, g) || !near(rep.Default.Max, 0.2) || rep.Default.Points != 2 {
		t.Errorf("default regrets %+v, want geomean %v, max 0.2 over 2 points", rep.Default, g)
	}
	for _, p := range rep.Points {
		if p.Default != autoKey || !p.TableRule || p.Table != ringSimple {
			t.Errorf("point %+v: want the auto series as the default and the rule's Ring/Simple/1ch", p)
		}
	}

	// A rule only from 1000 bytes: at 100 the table has no rule, so it is
	// the default there (auto: regret 0.2).
	rep, err = Validate(table(rule(1000, -1, tuning.Ring, proto.LL, 1)), ss, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := math.Sqrt(1.2) - 1; !near(rep.Table.Geomean, g) || rep.Points[0].TableRule || rep.Points[0].Table != autoKey {
		t.Errorf("table regrets %+v, first point %+v: want the default where no rule applies", rep.Table, rep.Points[0])
	}
}

// Without an auto series the default is the picker's configuration; a
// choice never measured at a size is unpriced there, not guessed.
func TestValidateDefaultPickerAndUnpriced(t *testing.T) {
	ss := []Series{
		at(ringLL, 100, 10, 1000, 20),
		at(ringSimple, 100, 11, 1000, 30),
	}
	def := func(_ Shape, b int64) (Key, bool) {
		if b < 500 {
			return ringSimple, true
		}
		return treeLL128, true // never measured
	}
	// The rule asks for 2 channels of Ring/LL, measured only with 1.
	rep, err := Validate(table(rule(0, 500, tuning.Ring, proto.LL, 2), rule(501, -1, tuning.Ring, proto.LL, 1)), ss, def)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Table.Points != 1 || rep.Table.Unpriced != 1 || rep.Table.Max != 0 {
		t.Errorf("table regrets %+v, want 1 point of regret 0 and 1 unpriced", rep.Table)
	}
	if rep.Default.Points != 1 || rep.Default.Unpriced != 1 || !near(rep.Default.Max, 0.1) {
		t.Errorf("default regrets %+v, want 1 point of regret 0.1 and 1 unpriced", rep.Default)
	}
}

func TestValidateErrors(t *testing.T) {
	a2a := Key{Shape: Shape{Coll: "alltoall", NRanks: 2, NHosts: 1}, Algo: "Ring", Proto: "LL", NCh: 1}
	rep, err := Validate(table(), []Series{at(a2a, 8, 1)}, nil)
	if !errors.Is(err, ErrNoPoints) || len(rep.Skipped) != 1 {
		t.Errorf("only an unknown collective: err %v, skipped %v; want ErrNoPoints and 1 skipped", err, rep.Skipped)
	}
	if _, err := Validate(nil, nil, nil); err == nil {
		t.Error("a nil table validated")
	}
	bad := table(rule(0, 100, tuning.Ring, proto.LL, 1), rule(50, -1, tuning.Ring, proto.LL, 1))
	if _, err := Validate(bad, []Series{at(ringLL, 8, 1)}, nil); err == nil {
		t.Error("a table of overlapping rules validated")
	}
}

// ModelDefault is the cost model's Choose with the communicator's channel
// count min(procs, 4), as a key of the shape.
func TestModelDefault(t *testing.T) {
	c := tuning.DefaultConstants()
	pick := ModelDefault(c, 2)
	for _, b := range []int64{8, 1 << 20} {
		k, ok := pick(ar2, b)
		m := tuning.Model{C: c.ForOneProcess(2, 1)}
		want, _ := m.Choose(tuning.AllReduce, 2, 1, b, tuning.Limits{MaxChannels: 2})
		if !ok || k != keyOfChoice(ar2, want) {
			t.Errorf("%d bytes: %+v %v, want %v", b, k, ok, want)
		}
	}
	if _, ok := pick(Shape{Coll: "alltoall", NRanks: 2, NHosts: 1}, 8); ok {
		t.Error("a default for alltoall")
	}
}

// EmbeddedDefault gives gccl's model's pick only for shapes measured with
// gccl's own stack: NCCL's default is not gccl's model.
func TestEmbeddedDefault(t *testing.T) {
	rec := func(backend string, n int) results.Record {
		return results.Record{Backend: backend, Collective: "allreduce", NRanks: n, NHosts: 1}
	}
	pick := EmbeddedDefault([]results.Record{rec("embedded", 2), rec("nccl-tests", 4), rec("embedded", 8), rec("nccl", 8)},
		func(s Shape, _ int64) (Key, bool) { return Key{Shape: s, Algo: "Ring", Proto: "LL", NCh: 1}, true })
	for n, want := range map[int]bool{2: true, 4: false, 8: false, 16: false} {
		if _, ok := pick(Shape{Coll: "allreduce", NRanks: n, NHosts: 1}, 8); ok != want {
			t.Errorf("%d ranks: default %v, want %v", n, ok, want)
		}
	}
}
