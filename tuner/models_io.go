package tuner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// Models is the file `tune fit --output` writes: the fitted time model of every
// configuration measured.
//
//	{"version": 1, "fits": [{"key": {"coll": "allreduce", "nranks": 2,
//	  "nhosts": 1, "algo": "Ring", "proto": "LL", "nch": 1, "buffsize": 0},
//	  "segments": [{"from_bytes": 0, "alpha_us": 2.1, "beta_gbs": 0.9}],
//	  "points": 22, "r2": 0.998, ...}]}
type Models struct {
	Version int   `json:"version"`
	Fits    []Fit `json:"fits"`
}

// ModelsVersion is the version of the models file this build writes and
// reads.
const ModelsVersion = 1

// ErrBadModels is wrapped by every error about a models file's content.
var ErrBadModels = errors.New("bad models file")

// keyJSON is Key as the file spells it: flat, lower-case names.
type keyJSON struct {
	Coll     string `json:"coll"`
	NRanks   int    `json:"nranks"`
	NHosts   int    `json:"nhosts"`
	Algo     string `json:"algo"`
	Proto    string `json:"proto"`
	NCh      int    `json:"nch"`
	BuffSize int64  `json:"buffsize"`
}

// fitFields is Fit without its methods; fitJSON's Key, shallower, shadows
// the embedded one.
type fitFields Fit

type fitJSON struct {
	Key keyJSON `json:"key"`
	fitFields
}

type modelsJSON struct {
	Version int       `json:"version"`
	Fits    []fitJSON `json:"fits"`
}

// Write writes m as indented JSON, the fits sorted by key (stable output
// for the same fits in any order), with Version set to ModelsVersion. It
// refuses a model that LoadModels would refuse.
func (m *Models) Write(w io.Writer) error {
	fits := append([]Fit(nil), m.Fits...)
	sort.SliceStable(fits, func(i, j int) bool { return keyLess(fits[i].Key, fits[j].Key) })
	out := modelsJSON{Version: ModelsVersion, Fits: make([]fitJSON, len(fits))}
	for i, f := range fits {
		k := f.Key
		out.Fits[i] = fitJSON{
			Key:       keyJSON{Coll: k.Coll, NRanks: k.NRanks, NHosts: k.NHosts, Algo: k.Algo, Proto: k.Proto, NCh: k.NCh, BuffSize: k.BuffSize},
			fitFields: fitFields(f),
		}
	}
	if err := validateFits("models", fits); err != nil {
		return err
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// LoadModels reads the models file at path.
func LoadModels(path string) (*Models, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseModels(data, path)
}

// ParseModels parses a models file; name (a file name) starts every error.
// Unknown fields, another version, a fit without segments, segments out of
// order, a non-positive or non-finite beta, a negative first alpha and a
// key fitted twice are errors (wrapping ErrBadModels) that name the fit.
func ParseModels(data []byte, name string) (*Models, error) {
	var in modelsJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("%s: not a models file (%v): %w", name, err, ErrBadModels)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: data after the models object: %w", name, ErrBadModels)
	}
	if in.Version != ModelsVersion {
		return nil, fmt.Errorf("%s: models version %d, this build reads version %d: %w", name, in.Version, ModelsVersion, ErrBadModels)
	}
	m := &Models{Version: in.Version, Fits: make([]Fit, len(in.Fits))}
	for i, fj := range in.Fits {
		f := Fit(fj.fitFields)
		k := fj.Key
		f.Key = Key{Shape: Shape{Coll: k.Coll, NRanks: k.NRanks, NHosts: k.NHosts}, Algo: k.Algo, Proto: k.Proto, NCh: k.NCh, BuffSize: k.BuffSize}
		m.Fits[i] = f
	}
	if err := validateFits(name, m.Fits); err != nil {
		return nil, err
	}
	return m, nil
}

// Lookup returns the fit of key k.
func (m *Models) Lookup(k Key) (Fit, bool) {
	for _, f := range m.Fits {
		if f.Key == k {
			return f, true
		}
	}
	return Fit{}, false
}

func validateFits(name string, fits []Fit) error {
	seen := make(map[Key]int, len(fits))
	for i, f := range fits {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s: fit %d (%s %s): %s: %w", name, i, f.Key.Shape, f.Key.Config(), fmt.Sprintf(format, args...), ErrBadModels)
		}
		if f.Key.Coll == "" || f.Key.NRanks < 1 || f.Key.NHosts < 1 {
			return bad("key needs a collective, nranks >= 1 and nhosts >= 1")
		}
		if j, ok := seen[f.Key]; ok {
			return bad("the same key as fit %d", j)
		}
		seen[f.Key] = i
		if len(f.Segments) == 0 {
			return bad("no segments")
		}
		for j, s := range f.Segments {
			switch {
			case j == 0 && s.FromBytes != 0:
				return bad("the first segment starts at %d bytes, not 0", s.FromBytes)
			case j > 0 && s.FromBytes <= f.Segments[j-1].FromBytes:
				return bad("segment %d starts at %d bytes, not after segment %d (%d)", j, s.FromBytes, j-1, f.Segments[j-1].FromBytes)
			case !(s.BetaGBs > 0) || math.IsInf(s.BetaGBs, 0):
				return bad("segment %d has beta %v GB/s; it must be positive and finite", j, s.BetaGBs)
			case math.IsNaN(s.AlphaUs) || math.IsInf(s.AlphaUs, 0):
				return bad("segment %d has alpha %v us", j, s.AlphaUs)
			case j == 0 && s.AlphaUs < 0:
				return bad("the first segment has a negative latency (alpha %v us)", s.AlphaUs)
			}
		}
		for _, v := range []float64{f.R2, f.MedianRelErr, f.MaxRelErr} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("non-finite quality (R2 %v, median error %v, max error %v)", f.R2, f.MedianRelErr, f.MaxRelErr)
			}
		}
	}
	return nil
}
