package tuner

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/gccl/gccl/lib/tuning"
)

// Validation of a tuning table on held-out measurements (issue 5's `tune
// validate`).
//
// A point is one measured size of one shape. Its best time is the least
// measured median of any configuration at that size. A choice is priced at
// a point when its configuration was measured there, matched exactly by Key
// (algorithm, protocol, channel count and buffer size; a rule's channel
// count 0 matches only a series run with channels 0); otherwise the point
// is unpriced for that choice and counted as such, never guessed.
//
// The table's choice at a point is its rule's; with no rule the stack
// decides, so it is the default's. The default is what the stack does on
// its own: the "auto" series when one was measured at that size (it is
// literally what the stack did), else the DefaultPicker's configuration
// (ModelDefault: the built-in cost model's pick).

// PointResult is the table and the default at one measured size.
type PointResult struct {
	Shape  Shape
	Bytes  int64
	Best   Key // the fastest measured configuration
	BestUs float64
	// Table is the table's choice and TableUs its measured time (NaN when
	// unpriced); TableRule is false where no rule applied and the default
	// decided.
	Table     Key
	TableUs   float64
	TableRule bool
	// Default is the stack's own choice, DefaultUs its measured time (NaN
	// when unpriced or when there is no default: DefaultOK false).
	Default   Key
	DefaultOK bool
	DefaultUs float64
	// DefaultSpread is the default's median run over its best, minus 1,
	// where it was measured in several runs; NaN otherwise.
	DefaultSpread float64
}

// TableRegret is t(table's choice) / t(best) - 1, NaN when unpriced.
func (p PointResult) TableRegret() float64 { return p.TableUs/p.BestUs - 1 }

// DefaultRegret is t(default) / t(best) - 1, NaN when unpriced.
func (p PointResult) DefaultRegret() float64 { return p.DefaultUs/p.BestUs - 1 }

// Regrets summarises the regret of one way of choosing over points.
type Regrets struct {
	Points   int     // priced points
	Unpriced int     // points whose choice was not measured there
	Geomean  float64 // geometric mean of 1+regret, minus 1; NaN without points
	Max      float64 // NaN without points
	// Worst is the point of the largest regret (valid when Points > 0).
	Worst PointResult
}

// add counts one point with regret g (NaN: unpriced).
func (r *Regrets) add(p PointResult, g float64, logSum *float64) {
	if math.IsNaN(g) {
		r.Unpriced++
		return
	}
	if r.Points == 0 || g > r.Max {
		r.Max, r.Worst = g, p
	}
	r.Points++
	*logSum += math.Log1p(g)
}

// summarise computes the regrets of pts by choice (the table's or the
// default's).
func summarise(pts []PointResult, regret func(PointResult) float64) Regrets {
	r := Regrets{Geomean: math.NaN(), Max: math.NaN()}
	var logSum float64
	for _, p := range pts {
		r.add(p, regret(p), &logSum)
	}
	if r.Points > 0 {
		r.Geomean = math.Expm1(logSum / float64(r.Points))
	}
	return r
}

// ShapeReport is the regrets of one shape.
type ShapeReport struct {
	Shape          Shape
	Table, Default Regrets
}

// Report is the result of Validate.
type Report struct {
	Points         []PointResult // by shape, then size
	Shapes         []ShapeReport
	Table, Default Regrets // over every point
	// Skipped lists the shapes left out: collectives lib/tuning does not
	// know.
	Skipped []Shape
	// BothTable and BothDefault are the regrets on the points where both
	// the table's and the default's choices were measured: the side-by-side
	// comparison (the fail-worse verdict is on these).
	BothTable, BothDefault Regrets
	// Spread is the yardstick's own noise: at each point where the default
	// was measured in several runs, its median run over its best run,
	// minus 1. A default regret of that order is measurement spread, not a
	// worse choice.
	Spread Regrets
}

// Worse reports whether the table does worse than the default on the
// points both were measured at: a higher geomean regret, or a higher
// worst point.
func (r Report) Worse() bool {
	if r.BothTable.Points == 0 {
		return false
	}
	const eps = 1e-9
	return r.BothTable.Geomean > r.BothDefault.Geomean+eps || r.BothTable.Max > r.BothDefault.Max+eps
}

// bestObserved is a configuration's best time at a size: the least of its
// runs (both placements, every repeat). The floor of what it can do is the
// steadiest yardstick on noisy data: a median moves with whichever runs
// happened to be slow.
func bestObserved(m Sample) float64 {
	best := m.Us
	for _, r := range m.Runs {
		if r > 0 && r < best {
			best = r
		}
	}
	return best
}

// ErrNoPoints is Validate's error when no measurement can be judged.
var ErrNoPoints = errors.New("no measured sizes of collectives a tuning table covers")

// Validate prices table and the default def (nil: only "auto" series) at
// every measured size of series; see the comment above for the rules.
func Validate(table *tuning.Table, series []Series, def DefaultPicker) (Report, error) {
	var rep Report
	if table == nil {
		return rep, errors.New("tune validate: no table")
	}
	if err := table.Validate(); err != nil {
		return rep, err
	}
	type at struct {
		shape Shape
		bytes int64
	}
	times := map[at]map[Key]float64{}
	runs := map[at]map[Key][]float64{}
	var order []at
	for _, s := range series {
		for _, m := range s.Samples {
			k := at{s.Key.Shape, m.Bytes}
			if times[k] == nil {
				times[k] = map[Key]float64{}
				runs[k] = map[Key][]float64{}
				order = append(order, k)
			}
			runs[k][s.Key] = m.Runs
			times[k][s.Key] = bestObserved(m)
		}
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.shape != b.shape {
			return keyLess(Key{Shape: a.shape}, Key{Shape: b.shape})
		}
		return a.bytes < b.bytes
	})
	skipped := map[Shape]bool{}
	for _, k := range order {
		coll, err := tuning.ParseColl(k.shape.Coll)
		if err != nil {
			if !skipped[k.shape] {
				skipped[k.shape] = true
				rep.Skipped = append(rep.Skipped, k.shape)
			}
			continue
		}
		meas := times[k]
		p := PointResult{Shape: k.shape, Bytes: k.bytes, BestUs: math.Inf(1), TableUs: math.NaN(), DefaultUs: math.NaN(), DefaultSpread: math.NaN()}
		for key, us := range meas {
			if us < p.BestUs || (us == p.BestUs && keyLess(key, p.Best)) {
				p.Best, p.BestUs = key, us
			}
		}
		if !(p.BestUs > 0) || math.IsInf(p.BestUs, 0) {
			continue
		}
		auto := Key{Shape: k.shape, Algo: "auto", Proto: "auto"}
		if _, ok := meas[auto]; ok {
			p.Default, p.DefaultOK = auto, true
		} else if def != nil {
			p.Default, p.DefaultOK = def(k.shape, k.bytes)
		}
		if p.DefaultOK {
			if us, ok := meas[p.Default]; ok {
				p.DefaultUs = us
			}
			if rs := runs[k][p.Default]; len(rs) > 1 {
				p.DefaultSpread = median(rs)/p.DefaultUs - 1
			}
		}
		if c, ok := table.Lookup(coll, k.shape.NRanks, k.shape.NHosts, k.bytes); ok {
			p.Table, p.TableRule = keyOfChoice(k.shape, c), true
			if us, ok := meas[p.Table]; ok {
				p.TableUs = us
			}
		} else {
			p.Table, p.TableUs = p.Default, p.DefaultUs
		}
		rep.Points = append(rep.Points, p)
	}
	if len(rep.Points) == 0 {
		return rep, fmt.Errorf("tune validate: %w", ErrNoPoints)
	}
	for i := 0; i < len(rep.Points); {
		j := i
		for j < len(rep.Points) && rep.Points[j].Shape == rep.Points[i].Shape {
			j++
		}
		pts := rep.Points[i:j]
		rep.Shapes = append(rep.Shapes, ShapeReport{Shape: pts[0].Shape,
			Table:   summarise(pts, PointResult.TableRegret),
			Default: summarise(pts, PointResult.DefaultRegret)})
		i = j
	}
	rep.Table = summarise(rep.Points, PointResult.TableRegret)
	rep.Default = summarise(rep.Points, PointResult.DefaultRegret)
	var both []PointResult
	for _, p := range rep.Points {
		if !math.IsNaN(p.TableRegret()) && !math.IsNaN(p.DefaultRegret()) {
			both = append(both, p)
		}
	}
	rep.BothTable = summarise(both, PointResult.TableRegret)
	rep.BothDefault = summarise(both, PointResult.DefaultRegret)
	rep.Spread = summarise(rep.Points, func(p PointResult) float64 { return p.DefaultSpread })
	return rep, nil
}
