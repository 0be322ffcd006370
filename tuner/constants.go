// Package tuner turns measurements into tuning decisions: it fits the
// built-in cost model's constants and (issue 5) per-configuration models,
// thresholds and tables. Its functions are pure over records; cmd/tune is
// the I/O shell around them.
package tuner

import (
	"fmt"
	"math"
	"strings"

	"github.com/montanaflynn/stats"
	"gonum.org/v1/gonum/optimize"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

// Point is one measured operation of a forced configuration.
type Point struct {
	Coll           tuning.Coll
	Algo           tuning.Algo
	Proto          proto.Protocol
	NCh            int // channels that carried data
	ReqCh          int // channels asked for (the forced configuration)
	NRanks, NHosts int
	// RealHosts: the hosts were machines (or processes the stack took for
	// them, perf --hosts) joined by the network transport; else they were
	// simulated in one process over its FIFOs (--ranks-per-host).
	RealHosts bool
	Bytes     int64
	Us        float64 // measured time (the median when recorded)
	Source    string  // file:line or a label, for reports
}

// PointsFromRecords keeps the out-of-place records of forced
// configurations (algorithm, protocol and channels all set) of the
// collectives the model knows, and says how many it skipped. The times of
// side-by-side runs are scaled to their shape's median run, as Collect
// does (blockFactors).
func PointsFromRecords(recs []results.Record) (pts []Point, skipped int) {
	factors := blockFactors(recs, func(i int) float64 { return recordUs(recs[i]) })
	for i, r := range recs {
		c, err1 := tuning.ParseColl(r.Collective)
		a, err2 := tuning.ParseAlgo(r.Algorithm)
		p, err3 := proto.Parse(r.Protocol)
		// A zero-byte operation is a no-op for some collectives (allgather of
		// fewer bytes than ranks): no latency to learn from.
		if err1 != nil || err2 != nil || err3 != nil || r.Channels < 1 || r.Placement != results.OutOfPlace || r.NRanks < 1 || r.Size <= 0 {
			skipped++
			continue
		}
		us := recordUs(r)
		if us <= 0 {
			skipped++
			continue
		}
		if f, ok := factors[i]; ok {
			us *= f
		}
		// The channels that carried data: a small message on a grain or
		// two leaves the others idle, whatever was asked.
		nch := r.Channels
		if r.ChosenCh > 0 {
			nch = r.ChosenCh
		}
		pts = append(pts, Point{Coll: c, Algo: a, Proto: p, NCh: nch, ReqCh: r.Channels, NRanks: r.NRanks,
			NHosts: max(r.NHosts, 1), RealHosts: r.NHosts > 1 && r.NProcs >= r.NHosts, Bytes: r.Size, Us: us, Source: r.Source})
	}
	return pts, skipped
}

// recordUs is a record's time: its median when recorded, else its time;
// <= 0 when it has neither.
func recordUs(r results.Record) float64 {
	us := r.MedianUs
	if us <= 0 || math.IsNaN(us) {
		us = r.TimeUs
	}
	if math.IsNaN(us) {
		return 0
	}
	return us
}

// knob is one fitted constant: where it lives in Constants.
type knob struct {
	name string
	ptrs func(c *tuning.Constants) []*float64 // tied values move together
	// from is where the fit starts when the start constants leave the
	// knob off (0); 0 here means 1.
	from float64
}

// noCap is where a bandwidth cap left off (0) starts a fit: so high it
// binds nothing, as off did. Starting it at 1 GB/s capped every point at
// once, and with many knobs the simplex did not find its way back.
const noCap = 1000

// knobs lists what FitConstants fits. The links inside a host and between
// hosts have knobs of their own (step latencies, channel bandwidth); those
// between hosts only with inter set, when the points include jobs across
// hosts: without them nothing measures the network, and its constants keep
// their start values.
func knobs(inter bool) []knob {
	links := []tuning.Link{tuning.Intra}
	if inter {
		links = append(links, tuning.Inter)
	}
	var ks []knob
	for _, a := range tuning.Algos() {
		for _, p := range proto.All() {
			if !tuning.SupportsProto(a, p) {
				continue // prices nothing (the board's algorithms run LL only)
			}
			ks = append(ks, knob{fmt.Sprintf("base_lat_us.%s.%s", a, p), func(c *tuning.Constants) []*float64 {
				return []*float64{&c.BaseLatUs[a][p]}
			}, 0})
			for _, l := range links {
				ks = append(ks, knob{fmt.Sprintf("step_lat_us.%s.%s.%s", l, a, p), func(c *tuning.Constants) []*float64 {
					return []*float64{&c.StepLatUs[l][a][p]}
				}, 0})
			}
			if p != proto.Simple {
				ks = append(ks, knob{fmt.Sprintf("max_channel_bw_gbs.%s.%s", a, p), func(c *tuning.Constants) []*float64 {
					return []*float64{&c.MaxChannelBwGBs[a][p]}
				}, noCap})
			}
		}
	}
	for _, p := range proto.All() {
		ks = append(ks, knob{fmt.Sprintf("oversub_step_lat_us.%s", p), func(c *tuning.Constants) []*float64 {
			return []*float64{&c.OversubStepLatUs[p]}
		}, 0})
	}
	ks = append(ks, knob{"oversub_hop_lat_us", func(c *tuning.Constants) []*float64 {
		return []*float64{&c.OversubHopLatUs}
	}, 0})
	ks = append(ks, knob{"board_peer_lat_us", func(c *tuning.Constants) []*float64 {
		return []*float64{&c.BoardPeerLatUs}
	}, 0})
	ks = append(ks, knob{"board_read_slowdown", func(c *tuning.Constants) []*float64 {
		return []*float64{&c.BoardReadSlowdown}
	}, 0})
	for _, l := range links {
		ks = append(ks, knob{fmt.Sprintf("channel_bw_gbs.%s", l), func(c *tuning.Constants) []*float64 {
			return []*float64{&c.ChannelBwGBs[l]}
		}, 0})
	}
	if inter {
		ks = append(ks, knob{"net_bw_gbs", func(c *tuning.Constants) []*float64 { return []*float64{&c.NetBwGBs} }, 0})
	}
	ks = append(ks,
		knob{"max_host_bw_gbs", func(c *tuning.Constants) []*float64 { return []*float64{&c.MaxHostBwGBs} }, noCap},
		knob{"host_bw_per_core_gbs", func(c *tuning.Constants) []*float64 { return []*float64{&c.HostBwPerCoreGBs} }, noCap},
		knob{"tree_bw_factor", func(c *tuning.Constants) []*float64 { return []*float64{&c.TreeBwFactor} }, 0},
		// A few MiB: the last-level cache of the machines at hand.
		knob{"cache_bytes", func(c *tuning.Constants) []*float64 { return []*float64{&c.CacheBytes} }, 4 << 20},
	)
	for _, a := range tuning.Algos() {
		for _, p := range proto.All() {
			if a.OnBoard() {
				continue // the board's reads are priced without a cache knee
			}
			ks = append(ks, knob{fmt.Sprintf("out_of_cache_bw_factor.%s.%s", a, p), func(c *tuning.Constants) []*float64 {
				return []*float64{&c.OutOfCacheBwFactor[a][p]}
			}, 1})
		}
	}
	return ks
}

// KnobNames lists the constants FitConstants fits, by the names --hold
// takes.
func KnobNames() []string {
	var names []string
	for _, k := range knobs(true) {
		names = append(names, k.name)
	}
	return names
}

// freeKnobs is knobs(inter) less those hold names. A hold must name some
// knob of knobs(true): one for the links between hosts is valid, if moot,
// when the points hold no job across hosts.
func freeKnobs(hold []string, inter bool) ([]knob, error) {
	all := knobs(inter)
	held := make([]bool, len(all))
	for _, h := range hold {
		h = strings.TrimSpace(h)
		found := false
		for i, k := range all {
			if holds(h, k.name) {
				held[i], found = true, true
			}
		}
		for _, k := range knobs(true) {
			found = found || holds(h, k.name)
		}
		if !found {
			return nil, fmt.Errorf("tuner: hold %q names no constant (valid: a name or a prefix ending at a dot of %s)", h, strings.Join(KnobNames(), ", "))
		}
	}
	var free []knob
	for i, k := range all {
		if !held[i] {
			free = append(free, k)
		}
	}
	if len(free) == 0 {
		return nil, fmt.Errorf("tuner: every constant is held; nothing to fit")
	}
	return free, nil
}

// holds reports whether the hold name h covers the knob named name: h's
// dot-separated parts are a prefix of name's, a "*" in h matching any one
// part ("step_lat_us.*.Ring.LL": both links).
func holds(h, name string) bool {
	hp, np := strings.Split(h, "."), strings.Split(name, ".")
	if h == "" || len(hp) > len(np) {
		return false
	}
	for i, part := range hp {
		if part != "*" && !strings.EqualFold(part, np[i]) {
			return false
		}
	}
	return true
}

// FitReport describes how well fitted constants predict the points.
type FitReport struct {
	Points       int
	MedianRelErr float64 // median of |predicted/measured - 1|
	MaxRelErr    float64
	Worst        Point   // the point of MaxRelErr
	WorstPred    float64 // its predicted time
	Evaluations  int
}

// Predict is the model's time for p under constants c, as the stack would
// use them in one process of procs processors.
func Predict(c tuning.Constants, procs int, p Point) (float64, bool) {
	m := tuning.Model{C: modelFor(c, procs, p.NHosts, p.RealHosts)}
	return m.Time(p.Coll, p.Algo, p.Proto, p.NCh, p.NRanks, p.NHosts, p.Bytes)
}

// Evaluate reports the relative errors of constants c on pts.
func Evaluate(c tuning.Constants, procs int, pts []Point) FitReport {
	rep := FitReport{Points: len(pts)}
	errs := make([]float64, 0, len(pts))
	for _, p := range pts {
		pred, ok := Predict(c, procs, p)
		e := math.Inf(1)
		if ok {
			e = math.Abs(pred/p.Us - 1)
		}
		errs = append(errs, e)
		if e > rep.MaxRelErr || len(errs) == 1 {
			rep.MaxRelErr, rep.Worst, rep.WorstPred = e, p, pred
		}
	}
	rep.MedianRelErr = median(errs)
	return rep
}

// median is the median of xs (NaN when empty); xs is left as it is.
func median(xs []float64) float64 {
	m, err := stats.Median(xs)
	if err != nil {
		return math.NaN()
	}
	return m
}

// FitConstants fits the model's latencies and bandwidths (see knobs) to
// the points, starting from start, by Nelder-Mead over the logarithms of
// the constants (they stay positive) minimising the sum of squared log
// ratios predicted/measured: relative error, so 8 B and 64 MiB weigh the
// same. procs is the processor count of the process that measured. The
// fitted constants keep start's other fields.
//
// hold names constants that keep start's values: a knob's whole name or a
// prefix of it ending at a dot ("step_lat_us.Intra.Ring.LL", "step_lat_us",
// "base_lat_us.Tree"); a "*" matches any one part, so
// "step_lat_us.*.Ring.LL" holds both links'. Parts compare without case.
// A name that holds nothing is an error listing the knobs. The constants
// of the links between hosts are fitted only when some point is a job
// across hosts.
func FitConstants(start tuning.Constants, procs int, pts []Point, hold []string) (tuning.Constants, FitReport, error) {
	if len(pts) == 0 {
		return start, FitReport{}, fmt.Errorf("tuner: no forced-configuration points to fit (need records with algorithm, protocol and channels set)")
	}
	inter := false
	for _, p := range pts {
		inter = inter || p.RealHosts
	}
	ks, err := freeKnobs(hold, false)
	if err != nil {
		return start, FitReport{}, err
	}
	var c tuning.Constants
	evals := 0
	if !inter {
		c, evals, err = fitKnobs(start, procs, pts, ks)
	} else {
		// In two stages: the links inside a host from the jobs on one
		// host, then the network's from the jobs across hosts, the rest
		// kept (fitting all at once let the simplex wander: the network's
		// constants trade off against the others on few points).
		var one, across []Point
		for _, p := range pts {
			if p.RealHosts {
				across = append(across, p)
			} else {
				one = append(one, p)
			}
		}
		// Without jobs on one host nothing pins the links inside a host
		// (one rank a host has no such hop): they keep their start values.
		var e1, e2 int
		c = start
		if len(one) > 0 {
			c, e1, err = fitKnobs(start, procs, one, ks)
		}
		if err == nil {
			all, _ := freeKnobs(hold, true)
			var net []knob
			for _, k := range all {
				if strings.Contains(k.name, "."+tuning.Inter.String()) {
					net = append(net, k)
				}
			}
			if len(net) > 0 {
				c, e2, err = fitKnobs(c, procs, across, net)
			}
		}
		evals = e1 + e2
	}
	if err != nil {
		return start, FitReport{}, err
	}
	if err := c.Validate(); err != nil {
		return start, FitReport{}, fmt.Errorf("tuner: fitted constants are invalid: %w", err)
	}
	rep := Evaluate(c, procs, pts)
	rep.Evaluations = evals
	return c, rep, nil
}

// fitKnobs fits the knobs ks to the points from start (see FitConstants)
// and returns the constants and the loss evaluations it took.
func fitKnobs(start tuning.Constants, procs int, pts []Point, ks []knob) (tuning.Constants, int, error) {
	x0 := make([]float64, len(ks))
	for i, k := range ks {
		v := *k.ptrs(&start)[0]
		if v <= 0 {
			v = max(k.from, 1)
		}
		x0[i] = math.Log(v)
	}
	apply := func(x []float64) tuning.Constants {
		c := start
		for i, k := range ks {
			v := math.Exp(x[i])
			for _, p := range k.ptrs(&c) {
				*p = v
			}
		}
		return c
	}
	loss := func(x []float64) float64 {
		c := apply(x)
		sum := 0.0
		for _, p := range pts {
			pred, ok := Predict(c, procs, p)
			if !ok || pred <= 0 {
				return math.Inf(1)
			}
			l := math.Log(pred / p.Us)
			sum += l * l
		}
		return sum
	}
	evals := 0
	x := x0
	// Restarts shake Nelder-Mead out of a collapsed simplex.
	for round := 0; round < 4; round++ {
		res, err := optimize.Minimize(optimize.Problem{Func: loss}, x, &optimize.Settings{FuncEvaluations: 20000}, &optimize.NelderMead{})
		if res == nil {
			return start, 0, fmt.Errorf("tuner: fit failed: %v", err)
		}
		evals += res.Stats.FuncEvaluations
		x = res.X
	}
	return apply(x), evals, nil
}

// modelFor is c as the stack prices a job of nHosts hosts measured by a
// process of procs processors: hosts simulated in one process share its
// processors and talk through its FIFOs; real ones have their own
// processors and the network between them.
func modelFor(c tuning.Constants, procs, nHosts int, real bool) tuning.Constants {
	if real {
		return c.ForOneProcess(procs, 1)
	}
	return c.ForOneProcess(procs, nHosts).InProcessHosts()
}
