package tuner

import (
	"math"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

// synthetic returns the points truth predicts for allreduce over the
// shapes and configurations of docs/data/tuning_sweep.sh.
func synthetic(truth tuning.Constants, procs int) []Point {
	var pts []Point
	for _, n := range []int{2, 4, 8} {
		for _, per := range []int{1, 2} {
			hosts := n / per
			for _, a := range tuning.Algos() {
				for _, p := range proto.All() {
					if !tuning.SupportsProto(a, p) {
						continue
					}
					for nch := 1; nch <= 2; nch++ {
						if a == tuning.OneShot && nch > 1 {
							continue // one channel only
						}
						for b := int64(8); b <= 32<<20; b *= 4 {
							pt := Point{Coll: tuning.AllReduce, Algo: a, Proto: p, NCh: nch, ReqCh: nch, NRanks: n, NHosts: hosts, Bytes: b}
							us, ok := Predict(truth, procs, pt)
							if !ok {
								panic("truth gives no time")
							}
							pt.Us = us
							pts = append(pts, pt)
						}
					}
				}
			}
		}
	}
	return pts
}

// The fit recovers the times of known constants from the defaults.
func TestFitConstantsRecoversSyntheticTruth(t *testing.T) {
	truth := tuning.DefaultConstants()
	truth.BaseLatUs[tuning.Ring][proto.LL] *= 2
	truth.StepLatUs[tuning.Intra][tuning.Tree][proto.Simple] *= 1.5
	truth.StepLatUs[tuning.Inter][tuning.Tree][proto.Simple] *= 1.5
	truth.ChannelBwGBs[tuning.Intra] *= 0.6
	truth.ChannelBwGBs[tuning.Inter] *= 0.6
	truth.TreeBwFactor = 0.7
	truth.BaseLatUs[tuning.OneShot][proto.LL] *= 2
	truth.MaxChannelBwGBs[tuning.OneShot][proto.LL] *= 0.5
	pts := synthetic(truth, 2)
	start := tuning.DefaultConstants()
	before := Evaluate(start, 2, pts)
	fitted, rep, err := FitConstants(start, 2, pts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.MedianRelErr > 0.02 || rep.MedianRelErr > before.MedianRelErr/5 {
		t.Fatalf("fit left median relative error %.2f%% (max %.1f%%), from %.1f%% at the start", 100*rep.MedianRelErr, 100*rep.MaxRelErr, 100*before.MedianRelErr)
	}
	if err := fitted.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFitConstantsNeedsPoints(t *testing.T) {
	if _, _, err := FitConstants(tuning.DefaultConstants(), 2, nil, nil); err == nil {
		t.Fatal("fitting no points should fail")
	}
}

// Held constants keep their start values while the rest move; a prefix
// holds on dot boundaries only ("Ring.LL" is not "Ring.LL128"); a name that
// holds nothing is an error naming the valid ones.
func TestFitConstantsHold(t *testing.T) {
	truth := tuning.DefaultConstants()
	truth.BaseLatUs[tuning.Ring][proto.LL] *= 2
	truth.StepLatUs[tuning.Intra][tuning.Ring][proto.LL] *= 3
	truth.StepLatUs[tuning.Inter][tuning.Ring][proto.LL] *= 3
	truth.StepLatUs[tuning.Intra][tuning.Ring][proto.LL128] *= 3
	truth.StepLatUs[tuning.Inter][tuning.Ring][proto.LL128] *= 3
	pts := synthetic(truth, 2)
	start := tuning.DefaultConstants()
	fitted, _, err := FitConstants(start, 2, pts, []string{"step_lat_us.*.ring.LL", "tree_bw_factor", "max_channel_bw_gbs"})
	if err != nil {
		t.Fatal(err)
	}
	for l := range tuning.NumLinks {
		if got, want := fitted.StepLatUs[l][tuning.Ring][proto.LL], start.StepLatUs[l][tuning.Ring][proto.LL]; got != want {
			t.Errorf("held step_lat_us.%s.Ring.LL moved: %v, want %v", l, got, want)
		}
	}
	if fitted.TreeBwFactor != start.TreeBwFactor || fitted.MaxChannelBwGBs != start.MaxChannelBwGBs {
		t.Errorf("held tree_bw_factor / max_channel_bw_gbs moved")
	}
	if fitted.StepLatUs[tuning.Intra][tuning.Ring][proto.LL128] == start.StepLatUs[tuning.Intra][tuning.Ring][proto.LL128] {
		t.Errorf("step_lat_us.Intra.Ring.LL128 did not move: holding Ring.LL held it too")
	}
	if fitted.BaseLatUs[tuning.Ring][proto.LL] == start.BaseLatUs[tuning.Ring][proto.LL] {
		t.Errorf("base_lat_us.Ring.LL did not move")
	}

	for _, bad := range []string{"step_lat", "base_lat_us.Ring.L", "nonsense", ""} {
		_, _, err := FitConstants(start, 2, pts, []string{bad})
		if err == nil || !strings.Contains(err.Error(), "base_lat_us.Ring.LL") {
			t.Errorf("hold %q: error %v, want one listing the valid names", bad, err)
		}
	}
}

func TestPointsFromRecords(t *testing.T) {
	base := results.Record{Collective: "allreduce", Algorithm: "Tree", Protocol: "LL", Channels: 2, ChosenCh: 1,
		Placement: results.OutOfPlace, NRanks: 4, NHosts: 2, Size: 64, TimeUs: 10, MedianUs: 9}
	auto := base
	auto.Algorithm = "auto"
	inPlace := base
	inPlace.Placement = results.InPlace
	noCh := base
	noCh.Channels = 0
	alltoall := base
	alltoall.Collective = "alltoall"
	noMedian := base
	noMedian.MedianUs = 0
	pts, skipped := PointsFromRecords([]results.Record{base, auto, inPlace, noCh, alltoall, noMedian})
	if skipped != 4 || len(pts) != 2 {
		t.Fatalf("kept %d, skipped %d: want 2 kept (forced, out of place, known collective), 4 skipped", len(pts), skipped)
	}
	p := pts[0]
	if p.Algo != tuning.Tree || p.Proto != proto.LL || p.NCh != 1 || p.ReqCh != 2 || p.NHosts != 2 || p.Us != 9 {
		t.Fatalf("point %+v: want Tree/LL, 1 channel carrying data of 2 asked, 2 hosts, the median 9 us", p)
	}
	if pts[1].Us != 10 {
		t.Fatalf("without a median the mean time is used: got %v", pts[1].Us)
	}
}

// The model's pick is compared with the measured best at every size.
func TestCompareChoices(t *testing.T) {
	c := tuning.DefaultConstants()
	pts := synthetic(c, 2)
	rows := CompareChoices(c, 2, pts)
	if len(rows) != 3*2*12 {
		t.Fatalf("%d rows, want one per (shape, size): 72", len(rows))
	}
	for _, r := range rows {
		if math.IsNaN(r.ModelUs) {
			t.Fatalf("%+v: the model's pick was not among the measured configurations", r)
		}
		if r.Regret() < -1e-9 {
			t.Fatalf("%+v: negative regret", r)
		}
		// The data are the model's own times: the pick's measured time is
		// its prediction. (It need not be the fastest: NCCL's channel rule
		// keeps channels above a per-channel threshold whatever they cost.)
		if math.Abs(r.ModelUs-r.PredictedUs) > 1e-9*r.ModelUs {
			t.Fatalf("%+v: measured %v for the pick, predicted %v", r, r.ModelUs, r.PredictedUs)
		}
	}
}

// Points of side-by-side runs come scaled to the median run, as Collect's
// series do: the fit sees configurations, not a run's luck.
func TestPointsFromRecordsScaleBlocks(t *testing.T) {
	truth := map[string]float64{"LL": 10, "LL128": 10.5, "Simple": 12}
	var recs []results.Record
	recs = append(recs, runRecords(1, true, 64, 1.0, truth)...)
	recs = append(recs, runRecords(2, true, 64, 1.3, truth)...)
	recs = append(recs, runRecords(3, true, 64, 0.9, truth)...)
	pts, skipped := PointsFromRecords(recs)
	if len(pts) != 9 || skipped != 0 {
		t.Fatalf("%d points, %d skipped; want 9 and 0", len(pts), skipped)
	}
	for _, p := range pts {
		if want := truth[p.Proto.String()]; !nearRel(p.Us, want) {
			t.Errorf("%v point %v us, want %v", p.Proto, p.Us, want)
		}
	}
}

// The network's constants are fitted only from jobs across hosts: points
// of one host leave them at their start values, however wrong; points
// across hosts recover them.
func TestFitConstantsInterOnlyFromHosts(t *testing.T) {
	truth := tuning.DefaultConstants()
	for a := range truth.StepLatUs[tuning.Inter] {
		for p := range truth.StepLatUs[tuning.Inter][a] {
			truth.StepLatUs[tuning.Inter][a][p] = 40 // a network hop, not a FIFO's
		}
	}
	truth.ChannelBwGBs[tuning.Inter] = 1.2
	var pts, one []Point
	for _, p := range synthetic(truth, 2) {
		if p.NHosts == 1 {
			one = append(one, p)
			pts = append(pts, p)
			continue
		}
		// The same jobs on real hosts, joined by the network.
		p.RealHosts = true
		p.Us, _ = Predict(truth, 2, p)
		pts = append(pts, p)
	}
	start := tuning.DefaultConstants()
	fitted, _, err := FitConstants(start, 2, one, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fitted.StepLatUs[tuning.Inter] != start.StepLatUs[tuning.Inter] || fitted.ChannelBwGBs[tuning.Inter] != start.ChannelBwGBs[tuning.Inter] {
		t.Errorf("points of one host moved the network's constants")
	}
	fitted, rep, err := FitConstants(start, 2, pts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.MedianRelErr > 0.05 {
		t.Errorf("fit across hosts left median relative error %.1f%% (max %.1f%%)", 100*rep.MedianRelErr, 100*rep.MaxRelErr)
	}
	if got := fitted.StepLatUs[tuning.Inter][tuning.Ring][proto.Simple]; got < 20 || got > 80 {
		t.Errorf("step_lat_us.Inter.Ring.Simple fitted %.3g, want near 40", got)
	}
	// Only jobs across hosts: the network's constants move, the rest keep
	// their start values.
	var across []Point
	for _, p := range pts {
		if p.RealHosts {
			across = append(across, p)
		}
	}
	fitted, _, err = FitConstants(start, 2, across, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fitted.StepLatUs[tuning.Intra] != start.StepLatUs[tuning.Intra] || fitted.BaseLatUs != start.BaseLatUs {
		t.Errorf("points across hosts alone moved the constants inside a host")
	}
	if fitted.StepLatUs[tuning.Inter] == start.StepLatUs[tuning.Inter] {
		t.Errorf("points across hosts did not move the network's constants")
	}
}

// The fit finds the board's terms per rank (a hop's cost and the reads'
// slowdown per rank beyond two) from one-shot and two-shot sweeps over 2-16
// ranks of a 16-core host, starting from the defaults' zeros.
func TestFitConstantsRecoversBoardPerRank(t *testing.T) {
	truth := tuning.DefaultConstants()
	truth.BoardPeerLatUs, truth.BoardReadSlowdown = 0.11, 0.085
	var pts []Point
	for _, n := range []int{2, 4, 8, 16} {
		for _, a := range []tuning.Algo{tuning.OneShot, tuning.TwoShot} {
			for b := int64(8); b <= 256<<10; b *= 4 {
				pt := Point{Coll: tuning.AllReduce, Algo: a, Proto: proto.LL, NCh: 1, ReqCh: 1, NRanks: n, NHosts: 1, Bytes: b}
				us, ok := Predict(truth, 16, pt)
				if !ok {
					t.Fatalf("truth gives no time for %+v", pt)
				}
				pt.Us = us
				pts = append(pts, pt)
			}
		}
	}
	start := tuning.DefaultConstants()
	if start.BoardPeerLatUs != 0 || start.BoardReadSlowdown != 0 {
		t.Fatalf("the defaults' board terms per rank are %g, %g; this test starts from 0", start.BoardPeerLatUs, start.BoardReadSlowdown)
	}
	var hold []string
	for _, k := range KnobNames() {
		if !strings.HasPrefix(k, "board_") {
			hold = append(hold, k)
		}
	}
	fitted, rep, err := FitConstants(start, 16, pts, hold)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(fitted.BoardPeerLatUs/truth.BoardPeerLatUs-1) > 0.02 || math.Abs(fitted.BoardReadSlowdown/truth.BoardReadSlowdown-1) > 0.02 {
		t.Errorf("fitted board_peer_lat_us %g, board_read_slowdown %g; want %g, %g (median error %.2f%%)",
			fitted.BoardPeerLatUs, fitted.BoardReadSlowdown, truth.BoardPeerLatUs, truth.BoardReadSlowdown, 100*rep.MedianRelErr)
	}
}
