package tuner

import "math"

// Segment is one piece of an alpha-beta model: t(bytes) = AlphaUs +
// bytes / (BetaGBs * 1e3) microseconds, for sizes from FromBytes on.
type Segment struct {
	FromBytes int64   `json:"from_bytes"`
	AlphaUs   float64 `json:"alpha_us"`
	BetaGBs   float64 `json:"beta_gbs"` // GB/s, GB = 1e9 B
}

// Fit is the fitted time model of one configuration (issue 5's `tune fit`):
// one segment, or two when the data leave a cache (the second starts at
// the break).
type Fit struct {
	Key      Key       `json:"key"`
	Segments []Segment `json:"segments"` // by FromBytes; the first starts at 0
	// Quality on the points it was fitted to.
	Points       int     `json:"points"`
	R2           float64 `json:"r2"`
	MedianRelErr float64 `json:"median_rel_err"`
	MaxRelErr    float64 `json:"max_rel_err"`
	// MinBytes and MaxBytes bound the measured sizes: outside them the
	// model extrapolates.
	MinBytes int64 `json:"min_bytes"`
	MaxBytes int64 `json:"max_bytes"`
	// Flagged marks a fit whose MaxRelErr exceeds FlagRelErr.
	Flagged bool `json:"flagged"`
	// Method says how the segments were fitted (MethodLine, MethodKnee,
	// and for "auto" MethodChoice or MethodBands).
	Method string `json:"method,omitempty"`
}

// FlagRelErr is the largest relative error a fit may leave on a point
// before it is flagged.
const FlagRelErr = 0.20

// Predict is the model's time in microseconds for bytes (NaN without
// segments).
func (f Fit) Predict(bytes int64) float64 {
	if len(f.Segments) == 0 {
		return math.NaN()
	}
	s := f.Segments[0]
	for _, t := range f.Segments[1:] {
		if bytes >= t.FromBytes {
			s = t
		}
	}
	return s.AlphaUs + float64(bytes)/(s.BetaGBs*1e3)
}

// Break is where the second segment starts, or 0 for a single segment.
func (f Fit) Break() int64 {
	if len(f.Segments) < 2 {
		return 0
	}
	return f.Segments[1].FromBytes
}
