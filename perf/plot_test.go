package perf

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

// --plot writes the busBW curves of the run it just did: a 1200x750 PNG,
// or an SVG, one curve per configuration swept.
func TestPlotOfTheRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "busbw.png")
	r := runPerf(t, AllReduce, args(tiny, []string{"-g", "2", "--proto", "LL,Simple", "--plot", out})...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the plot does not decode: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 750 {
		t.Errorf("plot is %dx%d, want 1200x750", b.Dx(), b.Dy())
	}
	// The stdout of the run is nccl-tests' as ever: the plot prints nothing.
	if strings.Contains(r.stdout, "busbw.png") {
		t.Errorf("stdout mentions the plot:\n%s", r.stdout)
	}

	svg := filepath.Join(dir, "busbw.svg")
	if r := runPerf(t, SendRecv, args(tiny, []string{"-g", "2", "--plot", svg})...); r.code != 0 {
		t.Fatalf("sendrecv: exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not XML: %v", err)
		}
	}
	if !bytes.Contains(b, []byte("sendrecv, 2 ranks")) {
		t.Error("the SVG's title does not name the run")
	}
}

// An existing --plot file is refused before anything runs, unless --force.
func TestPlotRefusesToOverwrite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "busbw.png")
	if err := os.WriteFile(out, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runPerf(t, AllReduce, args(tiny, []string{"--plot", out})...)
	if r.code != exitInvalidUsage || !strings.Contains(r.stderr, "already exists") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("ran before refusing:\n%s", r.stdout)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep" {
		t.Error("the file was overwritten")
	}
	if r := runPerf(t, AllReduce, args(tiny, []string{"--plot", out, "--force"})...); r.code != 0 {
		t.Fatalf("--force: exit %d: %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(out); !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Error("--force did not write the plot")
	}
}

// The records kept for the plot keep their iterations, thinned, so the
// plot can shade their interquartile range.
func TestPlotKeepsIterations(t *testing.T) {
	e := &engine{o: &Options{Plot: "busbw.png"}}
	var it []float64
	for i := 0; i < 1000; i++ {
		it = append(it, float64(1000-i))
	}
	e.keepForPlot(results.Record{IterTimesUs: it})
	got := e.plotRecs[0].IterTimesUs
	if len(got) != plotIterSamples || !slices.IsSorted(got) {
		t.Fatalf("kept %d iterations (sorted: %v), want %d", len(got), slices.IsSorted(got), plotIterSamples)
	}
	if q1, q3 := got[len(got)/4], got[3*len(got)/4]; q1 < 240 || q1 > 260 || q3 < 740 || q3 > 760 {
		t.Errorf("quartiles %v and %v, the run's are 250 and 750", q1, q3)
	}
	if len(it) != 1000 || it[0] != 1000 {
		t.Error("the run's record was changed")
	}
}
