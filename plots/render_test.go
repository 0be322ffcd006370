package plots

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gccl/gccl/results"
)

// small is a page that renders fast: 5x3.5 inches at 80 DPI, 400x280.
var small = Page{Width: 5 * vg.Inch, Height: 3.5 * vg.Inch, DPI: 80}

func render(t *testing.T, fig *Figure, format string, pg Page) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, format, fig, pg); err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	return b.Bytes()
}

// checkPNG decodes a PNG of the page's size that is not blank: at least
// 2% of it is ink, and it holds every colour of want (exactly: the
// middle of a line or a band is not anti-aliased).
func checkPNG(t *testing.T, data []byte, pg Page, want ...color.Color) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("PNG does not decode: %v", err)
	}
	w, h := pg.Pixels()
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("PNG is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	counts := map[color.RGBA]int{}
	ink := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			counts[c]++
			if c != (color.RGBA{255, 255, 255, 255}) {
				ink++
			}
		}
	}
	if frac := float64(ink) / float64(b.Dx()*b.Dy()); frac < 0.02 {
		t.Errorf("PNG is nearly blank: %.1f%% ink", 100*frac)
	}
	for _, c := range want {
		rgba := color.RGBAModel.Convert(c).(color.RGBA)
		if counts[rgba] < 10 {
			t.Errorf("PNG has %d pixels of %v, want at least 10", counts[rgba], rgba)
		}
	}
	return img
}

// checkSVG parses an SVG as XML and checks its root and size.
func checkSVG(t *testing.T, data []byte, width string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	var root *xml.StartElement
	elements := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			elements++
			if root == nil {
				root = &se
			}
		}
	}
	if root == nil || root.Name.Local != "svg" {
		t.Fatalf("SVG root %v, want svg", root)
	}
	for _, a := range root.Attr {
		if a.Name.Local == "width" && a.Value != width {
			t.Errorf("SVG width %q, want %q", a.Value, width)
		}
	}
	if elements < 50 {
		t.Errorf("SVG has %d elements: nearly empty", elements)
	}
}

func checkPDF(t *testing.T, data []byte) {
	t.Helper()
	if !bytes.HasPrefix(data, []byte("%PDF-")) || !bytes.HasSuffix(bytes.TrimSpace(data), []byte("%%EOF")) || len(data) < 5000 {
		t.Errorf("not a PDF: %d bytes starting %q", len(data), data[:min(len(data), 8)])
	}
	// One embedded font (see pdfCanvas).
	if n := bytes.Count(data, []byte("/BaseFont /LiberationSans")); n != 1 {
		t.Errorf("PDF embeds %d fonts, want Liberation Sans alone", n)
	}
}

// threeConfigs is a sweep of three configurations over 8 B to 1 M.
func threeConfigs() []results.Record {
	sizes := pow2s(3, 20)
	var recs []results.Record
	recs = append(recs, sweep(sizes, 1, cfg("Ring", "LL", 1))...)
	recs = append(recs, sweep(sizes, 2, cfg("Ring", "Simple", 2))...)
	recs = append(recs, sweep(sizes, 3, cfg("Tree", "Simple", 2))...)
	return recs
}

// One figure in every format: a PNG of the asked size and DPI with every
// curve's colour, an SVG that parses, a PDF.
func TestPlotFormats(t *testing.T) {
	fig, err := CurvesFigure(threeConfigs(), Options{CurveOptions: CurveOptions{Metric: BusBW}})
	if err != nil {
		t.Fatal(err)
	}
	if fig.Title != "busBW: allreduce, 2 ranks, vm (embedded), 2026-11-21" {
		t.Errorf("title %q", fig.Title)
	}
	checkPNG(t, render(t, fig, "png", small), small, curveColor(0), curveColor(1), curveColor(2))
	big := Page{Width: 6 * vg.Inch, Height: 4 * vg.Inch, DPI: 120}
	checkPNG(t, render(t, fig, "png", big), big, curveColor(0), curveColor(1), curveColor(2))
	checkSVG(t, render(t, fig, "svg", small), "360pt")
	checkPDF(t, render(t, fig, "pdf", small))
	if err := Write(io.Discard, "gif", fig, small); err == nil {
		t.Error("gif: no error")
	}
}

// Every metric draws, with fitted models.
func TestPlotMetricsAndFits(t *testing.T) {
	recs := threeConfigs()
	// A model for the LL curve only: 4 us + 1 GB/s.
	modelOf := func(rs []results.Record) (Model, error) {
		if rs[0].Protocol != "LL" {
			return nil, errors.New("no model")
		}
		return func(b int64) float64 { return 4 + float64(b)/1e3 }, nil
	}
	for _, m := range []Metric{BusBW, AlgBW, Time, BusBWNorm} {
		fig, err := CurvesFigure(recs, Options{CurveOptions: CurveOptions{Metric: m}, Models: modelOf})
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if len(fig.Warnings) != 2 { // two curves without a model
			t.Errorf("%v: warnings %q", m, fig.Warnings)
		}
		if !strings.Contains(fig.Subtitle, "fitted") {
			t.Errorf("%v: subtitle %q does not mention the models", m, fig.Subtitle)
		}
		checkPNG(t, render(t, fig, "png", small), small, curveColor(0), curveColor(1), curveColor(2))
	}
}

func TestPlotCompare(t *testing.T) {
	base := threeConfigs()
	cand := faster(base, 1.2)
	fig := compareFig(t, Set{"base.jsonl", base}, Set{"cand.jsonl", cand}, Options{CurveOptions: CurveOptions{Metric: BusBW}}, UniformThreshold(0.1))
	if fig.Title != "busBW: cand.jsonl vs base.jsonl" || len(fig.Warnings) != 0 {
		t.Errorf("title %q, warnings %q", fig.Title, fig.Warnings)
	}
	var legend []string
	for _, e := range fig.legend {
		legend = append(legend, e.name)
	}
	if got := strings.Join(legend, "|"); !strings.Contains(got, "Ring/LL/1ch (×1.20)") || !strings.Contains(got, "±10%") {
		t.Errorf("legend %q", got)
	}
	img := checkPNG(t, render(t, fig, "png", small), small, curveColor(0), curveColor(1), curveColor(2))
	// The ratio panel is the lower third: the candidate's colours are there.
	b := img.Bounds()
	found := false
	for y := b.Max.Y * 2 / 3; y < b.Max.Y && !found; y++ {
		for x := 0; x < b.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)) == color.RGBAModel.Convert(curveColor(0)) {
				found = true
				break
			}
		}
	}
	if !found {
		t.Error("no ratio line in the lower third")
	}
	checkSVG(t, render(t, fig, "svg", small), "360pt")
}

func TestPlotWinners(t *testing.T) {
	const ll, simple = "Ring/LL/1ch", "Ring/Simple/1ch"
	maps := []ShapeMap{{
		Shape: Shape{Coll: "allreduce", NRanks: 2, NHosts: 1},
		Wins: []Win{
			{Bytes: 8, Config: ll, Us: 2, RunnerUp: simple, MarginPct: 150},
			{Bytes: 64, Config: simple, Us: 3, RunnerUp: ll, MarginPct: 100.0 / 3},
			{Bytes: 512, Config: simple, Us: 10, RunnerUp: ll, MarginPct: 100},
			{Bytes: 4096, Config: simple, Us: 30, RunnerUp: ll, MarginPct: 500.0 / 3},
		},
		Table: []Band{{From: 0, To: 40, Config: ll}, {From: 41, To: -1, Config: "auto"}},
	}}
	fig, err := WinnersFigure(maps, WinnerOptions{Table: "table.json"})
	if err != nil {
		t.Fatal(err)
	}
	colors := bandColors(maps)
	if len(colors) != 3 || colors["auto"] != autoGrey {
		t.Errorf("colours %v", colors)
	}
	checkPNG(t, render(t, fig, "png", small), small, colors[ll], colors[simple], autoGrey)
	checkPDF(t, render(t, fig, "pdf", small))
	if _, err := WinnersFigure(nil, WinnerOptions{}); !errors.Is(err, ErrNoPoints) {
		t.Errorf("no maps: %v", err)
	}
}

// A results file of every format the harness reads plots: our JSONL, and
// the CSV and nccl-tests JSON written from it, nccl-tests' text output
// and a real nccl-tests -J file.
func TestPlotEveryInputFormat(t *testing.T) {
	all, err := results.ReadFile("../docs/data/tuning/pass1_n2_per1.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	flt, _ := ParseFilter("algo=Ring,proto=Simple,nch=1")
	recs := flt.Apply(all)
	if len(recs) == 0 {
		t.Fatal("no Ring/Simple/1ch records in the sweep")
	}
	dir := t.TempDir()
	write := func(name string, put func(io.Writer) error) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := put(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	csvPath := write("run.csv", func(w io.Writer) error {
		cw := results.NewCSVWriter(w)
		for _, r := range recs {
			if err := cw.Write(r); err != nil {
				return err
			}
		}
		return cw.Flush()
	})
	jsonPath := write("run.json", func(w io.Writer) error { return results.WriteNCCLJSON(w, recs, []string{"all_reduce_perf"}) })

	for _, c := range []struct {
		path   string
		format results.Format
	}{
		{"../docs/data/tuning/pass1_n2_per1.jsonl.gz", results.FormatJSONL},
		{csvPath, results.FormatCSV},
		{jsonPath, results.FormatNCCLJSON},
		{"../results/testdata/h200x2_all_reduce_perf.txt", results.FormatNCCLText},
		{"../results/testdata/nccltests_v3_all_reduce.json", results.FormatNCCLJSON},
	} {
		data, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if zr, err := gzip.NewReader(bytes.NewReader(data)); err == nil { // the committed sweeps are gzipped
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if f, err := results.Detect(c.path, data); err != nil || f != c.format {
			t.Errorf("%s: detected %v (%v), want %v", c.path, f, err, c.format)
		}
		rs, err := results.ReadFile(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		fig, err := CurvesFigure(rs, Options{CurveOptions: CurveOptions{Metric: BusBW}})
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		checkPNG(t, render(t, fig, "png", small), small, curveColor(0))
	}
}

func TestPage(t *testing.T) {
	for _, c := range []struct {
		in   string
		dpi  int
		w, h vg.Length
		err  bool
	}{
		{in: "8x5", dpi: 150, w: 8 * vg.Inch, h: 5 * vg.Inch},
		{in: "8x5in", dpi: 150, w: 8 * vg.Inch, h: 5 * vg.Inch},
		{in: "20x12.5cm", dpi: 150, w: 20 * vg.Centimeter, h: 12.5 * vg.Centimeter},
		{in: "1600x1000px", dpi: 200, w: 8 * vg.Inch, h: 5 * vg.Inch},
		{in: "576x360pt", dpi: 100, w: 8 * vg.Inch, h: 5 * vg.Inch},
		{in: "8", err: true}, {in: "8x", err: true}, {in: "0x5", err: true}, {in: "1x1", err: true}, {in: "100x5", err: true}, {in: "8x5furlong", err: true},
	} {
		w, h, err := ParseSize(c.in, c.dpi)
		if c.err {
			if err == nil {
				t.Errorf("ParseSize(%q): no error", c.in)
			}
			continue
		}
		if err != nil || w != c.w || h != c.h {
			t.Errorf("ParseSize(%q) = %v x %v, %v; want %v x %v", c.in, w, h, err, c.w, c.h)
		}
	}
	if w, h := DefaultPage.Pixels(); w != 1200 || h != 750 {
		t.Errorf("default page %dx%d pixels", w, h)
	}
	for in, want := range map[string]string{"a.png": "png", "B.SVG": "svg", "dir.v1/c.pdf": "pdf", "x.gif": "", "noext": ""} {
		got, err := FormatOf(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("FormatOf(%q) = %q, %v", in, got, err)
		}
	}
	if CheckDPI(150) != nil || CheckDPI(5) == nil || CheckDPI(5000) == nil {
		t.Error("CheckDPI")
	}
}

// A legend too long for the page shrinks its text, then sums up what does
// not fit; it never takes more than its share of the width.
func TestLegendOverflow(t *testing.T) {
	var recs []results.Record
	for ch := 1; ch <= 64; ch++ {
		host := func(r *results.Record) { r.Host = fmt.Sprintf("node-%02d.cluster.example.org", ch) }
		recs = append(recs, sweep(pow2s(3, 10), float64(ch), cfg("Ring", "Simple", ch), host)...)
	}
	fig, err := CurvesFigure(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := draw.New(vgimg.NewWith(vgimg.UseWH(small.Width, small.Height), vgimg.UseDPI(small.DPI)))
	l := fig.layoutLegend(c)
	if l.width() > vg.Length(maxLegendShare)*small.Width {
		t.Errorf("legend %v wide on a %v page", l.width(), small.Width)
	}
	last := l.entries[len(l.entries)-1].name
	if l.style.Font.Size != legendSizes[len(legendSizes)-1] || !strings.HasPrefix(last, "... and ") {
		t.Errorf("legend at %v pt ends %q", l.style.Font.Size, last)
	}
	checkPNG(t, render(t, fig, "png", small), small, curveColor(0))

	// A short legend keeps the full text size and every entry.
	fig, _ = CurvesFigure(threeConfigs(), Options{})
	if l := fig.layoutLegend(c); len(l.entries) != 3 || l.style.Font.Size != legendSize {
		t.Errorf("short legend: %d entries at %v pt", len(l.entries), l.style.Font.Size)
	}
}
