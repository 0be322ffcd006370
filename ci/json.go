package ci

import (
	"encoding/json"
	"io"
	"math"
)

// The JSON form of a report, for tools: every number a test produced, with
// null where there is none (JSON has no NaN or infinity).

type jsonReport struct {
	Pass          bool             `json:"pass"`
	ExitCode      int              `json:"exit_code"`
	Outcome       string           `json:"outcome"`
	Metric        string           `json:"metric"`
	Unit          string           `json:"unit"`
	Normalize     string           `json:"normalize"`
	Thresholds    string           `json:"thresholds"`
	Alpha         float64          `json:"alpha"`
	Confidence    float64          `json:"confidence"`
	MinSize       int64            `json:"min_size"`
	RequireAll    bool             `json:"require_all"`
	Counts        map[string]int   `json:"counts"`
	Comparisons   []jsonComparison `json:"comparisons"`
	OnlyBaseline  []Key            `json:"only_baseline"`
	OnlyCandidate []Key            `json:"only_candidate"`
	Notes         []string         `json:"notes"`
}

type jsonComparison struct {
	Key       Key         `json:"key"`
	Name      string      `json:"name"`
	Verdict   string      `json:"verdict"`
	Unit      string      `json:"unit"`
	Baseline  jsonSummary `json:"baseline"`
	Candidate jsonSummary `json:"candidate"`
	Ratio     *float64    `json:"ratio"`
	Change    *float64    `json:"change"`
	RatioLo   *float64    `json:"ratio_lo"`
	RatioHi   *float64    `json:"ratio_hi"`
	P         *float64    `json:"p"`
	Tested    bool        `json:"tested"`
	Threshold float64     `json:"threshold"`
	Notes     []string    `json:"notes,omitempty"`
}

type jsonSummary struct {
	N      int      `json:"n"`
	Runs   int      `json:"runs"`
	Median *float64 `json:"median"`
	Lo     *float64 `json:"lo"`
	Hi     *float64 `json:"hi"`
}

// finite is f, or nil when f is NaN or infinite.
func finite(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// WriteJSON writes the report as one indented JSON document.
func WriteJSON(w io.Writer, r *Report) error {
	o := r.Options
	out := jsonReport{Pass: r.Pass(), ExitCode: r.ExitCode(), Outcome: verdictLine(r),
		Metric: o.Metric.String(), Unit: Unit(o.Metric, o.Normalize), Normalize: o.Normalize.String(),
		Thresholds: o.Thresholds.String(), Alpha: o.Alpha, Confidence: o.Confidence, MinSize: o.MinSize, RequireAll: o.RequireAll,
		Counts: map[string]int{
			Regression.String(): r.Count(Regression), Noisy.String(): r.Count(Noisy),
			Improvement.String(): r.Count(Improvement), Unchanged.String(): r.Count(Unchanged),
			"only_baseline": len(r.OnlyBaseline), "only_candidate": len(r.OnlyCandidate),
		},
		Comparisons: []jsonComparison{}, OnlyBaseline: append([]Key{}, r.OnlyBaseline...),
		OnlyCandidate: append([]Key{}, r.OnlyCandidate...), Notes: r.Notes,
	}
	sum := func(s Summary) jsonSummary {
		return jsonSummary{N: s.N, Runs: s.Runs, Median: finite(s.Center), Lo: finite(s.Lo), Hi: finite(s.Hi)}
	}
	for _, c := range r.Comparisons {
		out.Comparisons = append(out.Comparisons, jsonComparison{
			Key: c.Key, Name: c.Key.String(), Verdict: c.Verdict.String(), Unit: c.Unit,
			Baseline: sum(c.Base), Candidate: sum(c.Cand),
			Ratio: finite(c.Ratio), Change: finite(c.Delta()), RatioLo: finite(c.RatioLo), RatioHi: finite(c.RatioHi),
			P: finite(c.P), Tested: c.Tested, Threshold: c.Threshold, Notes: c.Notes,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
