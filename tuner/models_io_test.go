package tuner

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func testModels(t *testing.T) *Models {
	t.Helper()
	knee := func(b float64) float64 {
		if b >= 4<<20 {
			return abTime(5, 4)(b)
		}
		return abTime(5, 10)(b)
	}
	one := synthSeries(abTime(5, 10), 0.03, 1)
	two := synthSeries(knee, 0.03, 2)
	two.Key = Key{Shape: Shape{Coll: "allgather", NRanks: 2, NHosts: 2}, Algo: "Ring", Proto: "Simple", NCh: 2} // a forced key: "auto" is fitted piecewise
	var m Models
	for _, s := range []Series{one, two} {
		f, err := FitSeries(s)
		if err != nil {
			t.Fatal(err)
		}
		m.Fits = append(m.Fits, f)
	}
	if len(m.Fits[1].Segments) != 2 {
		t.Fatalf("want a two-segment fit in the test models: %+v", m.Fits[1])
	}
	return &m
}

func TestModelsRoundTrip(t *testing.T) {
	m := testModels(t)
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"version": 1`, `"coll": "allreduce"`, `"nranks": 4`, `"nhosts": 1`, `"algo": "Ring"`,
		`"proto": "Simple"`, `"nch": 2`, `"buffsize": 0`, `"from_bytes": 4194304`, `"beta_gbs"`, `"max_rel_err"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("file lacks %s:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), `"Coll"`) || strings.Contains(buf.String(), `"Shape"`) {
		t.Errorf("the key is not flat:\n%s", buf.String())
	}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadModels(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != ModelsVersion || len(got.Fits) != 2 {
		t.Fatalf("loaded %+v", got)
	}
	for _, f := range m.Fits {
		g, ok := got.Lookup(f.Key)
		if !ok {
			t.Fatalf("Lookup(%+v) finds nothing", f.Key)
		}
		if !reflect.DeepEqual(g, f) {
			t.Errorf("round trip:\n got %+v\nwant %+v", g, f)
		}
		if g.Predict(1<<20) != f.Predict(1<<20) {
			t.Errorf("predictions differ")
		}
	}
	if _, ok := got.Lookup(Key{Shape: Shape{Coll: "allreduce", NRanks: 8, NHosts: 1}, Algo: "Ring", Proto: "Simple", NCh: 2}); ok {
		t.Errorf("Lookup finds a key that is not there")
	}

	// Stable: the same fits in another order write the same bytes.
	rev := &Models{Fits: []Fit{m.Fits[1], m.Fits[0]}}
	var buf2 bytes.Buffer
	if err := rev.Write(&buf2); err != nil {
		t.Fatal(err)
	}
	if buf2.String() != buf.String() {
		t.Errorf("output depends on the fits' order")
	}
}

func TestParseModelsErrors(t *testing.T) {
	const seg = `{"from_bytes":0,"alpha_us":2,"beta_gbs":5}`
	const key = `"key":{"coll":"allreduce","nranks":2,"nhosts":1,"algo":"Ring","proto":"LL","nch":1,"buffsize":0}`
	fit := func(segs string) string { return `{"version":1,"fits":[{` + key + `,"segments":[` + segs + `]}]}` }
	for _, tc := range []struct{ name, data, want string }{
		{"not JSON", `allreduce 2 8 1.5`, "m.json: not a models file"},
		{"a list", `[1,2]`, "not a models file"},
		{"no version", `{"fits":[]}`, "models version 0, this build reads version 1"},
		{"newer version", `{"version":2,"fits":[]}`, "models version 2"},
		{"unknown field", `{"version":1,"fitz":[]}`, `unknown field "fitz"`},
		{"trailing data", `{"version":1,"fits":[]} {}`, "data after"},
		{"no segments", fit(``), "fit 0 (allreduce 2 ranks/1 hosts Ring/LL/1ch): no segments"},
		{"zero beta", fit(`{"from_bytes":0,"alpha_us":2,"beta_gbs":0}`), "segment 0 has beta 0 GB/s"},
		{"negative beta", fit(seg + `,{"from_bytes":64,"alpha_us":2,"beta_gbs":-1}`), "segment 1 has beta -1 GB/s"},
		{"first from", fit(`{"from_bytes":8,"alpha_us":2,"beta_gbs":5}`), "starts at 8 bytes, not 0"},
		{"out of order", fit(seg + `,{"from_bytes":0,"alpha_us":2,"beta_gbs":5}`), "segment 1 starts at 0 bytes, not after segment 0"},
		{"negative latency", fit(`{"from_bytes":0,"alpha_us":-2,"beta_gbs":5}`), "negative latency"},
		{"no key", `{"version":1,"fits":[{"segments":[` + seg + `]}]}`, "fit 0"},
		{"twice", `{"version":1,"fits":[{` + key + `,"segments":[` + seg + `]},{` + key + `,"segments":[` + seg + `]}]}`, "fit 1 (allreduce 2 ranks/1 hosts Ring/LL/1ch): the same key as fit 0"},
	} {
		_, err := ParseModels([]byte(tc.data), "m.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "m.json: ") {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.want)
			continue
		}
		if !errors.Is(err, ErrBadModels) {
			t.Errorf("%s: %v does not wrap ErrBadModels", tc.name, err)
		}
	}
	if m, err := ParseModels([]byte(fit(seg)), "m.json"); err != nil || len(m.Fits) != 1 {
		t.Errorf("a good file: %v", err)
	}
	if _, err := LoadModels(filepath.Join(t.TempDir(), "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("a missing file: %v", err)
	}
}

func TestWriteRefusesBadModels(t *testing.T) {
	m := testModels(t)
	m.Fits[0].Segments[0].BetaGBs = math.Inf(1)
	if err := m.Write(&bytes.Buffer{}); !errors.Is(err, ErrBadModels) {
		t.Errorf("infinite beta: %v", err)
	}
	m = testModels(t)
	m.Fits[1].R2 = math.NaN()
	if err := m.Write(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "fit 0 (allgather") {
		t.Errorf("NaN R2: %v (the fit is named by its index in the sorted file)", err)
	}
}
