package report

import (
	"encoding/json"
	"image"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/browser"
)

// The browser test opens a report in a real browser, headless Chromium,
// driven by internal/browser. It records every console message, uncaught
// exception, log entry and request while the page loads, then measures
// every <svg> and <img> and takes a screenshot.

// Window size of the browser, CSS pixels.
const winW, winH = 1280, 1600

// pageCheck is what the browser saw of a page.
type pageCheck struct {
	browser.Seen        // its errors, requests, ...
	Shapes       shapes // what the page's script measured
	PNG          []byte // the screenshot
}

// shapes is the measuring script's result.
type shapes struct {
	Title string       `json:"title"`
	SVGs  [][2]float64 `json:"svgs"` // rendered width, height
	Imgs  [][3]float64 `json:"imgs"` // natural width, height; rendered width
	Rows  int          `json:"rows"` // rows of the keys table
	// Sorted is the keys table's "newest" column after a click on its
	// heading: the page's script sorts it.
	Sorted []float64 `json:"sorted"`
}

const measureJS = `(function () {
  function box(e) { var r = e.getBoundingClientRect(); return [r.width, r.height]; }
  var out = {title: document.title, svgs: [], imgs: [], rows: 0, sorted: []};
  document.querySelectorAll("svg").forEach(function (e) { out.svgs.push(box(e)); });
  Array.prototype.forEach.call(document.images, function (e) { out.imgs.push([e.naturalWidth, e.naturalHeight, box(e)[0]]); });
  var t = document.getElementById("key-table");
  if (t) {
    out.rows = t.tBodies[0].rows.length;
    t.tHead.rows[0].cells[2].click();
    Array.prototype.forEach.call(t.tBodies[0].rows, function (r) { out.sorted.push(parseFloat(r.cells[2].getAttribute("data-v"))); });
  }
  return out;
})()`

// openPage loads the HTML file at path in a fresh browser and reports
// what it saw.
func openPage(t *testing.T, bin, path string) pageCheck {
	t.Helper()
	b, err := browser.Start(bin, browser.Options{Width: winW, Height: winH, ProfileDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	page, err := b.Open(browser.FileURL(path, ""), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	v, err := page.Eval(measureJS)
	if err != nil {
		t.Fatalf("the measuring script: %v", err)
	}
	var out pageCheck
	if err := json.Unmarshal(v, &out.Shapes); err != nil {
		t.Fatalf("the measuring script's result %s: %v", v, err)
	}
	if out.PNG, err = page.Screenshot(); err != nil {
		t.Fatal(err)
	}
	out.Seen = page.Seen()
	return out
}

// blankness is browser.Blankness, failing the test on a bad PNG.
func blankness(t *testing.T, b []byte) (variance float64, size image.Point) {
	t.Helper()
	v, size, err := browser.Blankness(b)
	if err != nil {
		t.Fatal(err)
	}
	return v, size
}

// TestBrowserRendersReport: a report of 200 keys x 100 runs with a gate
// loads in headless Chromium with no console error and no request
// beyond the file itself; every chart renders with a size; the tables
// sort; the screenshot is a picture, not a blank page.
func TestBrowserRendersReport(t *testing.T) {
	bin := browser.FindForTest(t)
	p := synthPage(200, 100)
	p.Gate = &GateTable{Baseline: "ci/baseline/embedded.jsonl", Candidate: "run 100", Unit: "GB/s",
		Rows: []GateRow{{Key: "allreduce float sum auto/auto/auto 4 ranks 1M out-of-place", Baseline: 10, Candidate: 9.1, Change: -0.09, PValue: 0.002, Verdict: "regression"}}}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, []byte(render(t, p)), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := openPage(t, bin, path)
	t.Logf("%s: loaded, measured and shot in %v", filepath.Base(bin), time.Since(start).Round(time.Millisecond))

	for _, e := range got.Errors {
		t.Errorf("browser: %s", e)
	}
	for _, u := range got.Remote() {
		t.Errorf("the page requested %s: it must request nothing beyond itself", u)
	}
	if got.Shapes.Title != p.Title {
		t.Errorf("document title %q, want %q", got.Shapes.Title, p.Title)
	}
	if want := 2 + DefaultCharts + 200; len(got.Shapes.SVGs) != want {
		t.Errorf("%d <svg> elements in the browser's DOM, want %d", len(got.Shapes.SVGs), want)
	}
	for i, s := range got.Shapes.SVGs {
		if !(s[0] > 0 && s[1] > 0) {
			t.Errorf("svg %d renders %gx%g", i, s[0], s[1])
		}
	}
	for i, m := range got.Shapes.Imgs {
		if !(m[0] > 0 && m[1] > 0 && m[2] > 0) {
			t.Errorf("img %d: natural %gx%g, rendered width %g", i, m[0], m[1], m[2])
		}
	}
	if got.Shapes.Rows != 200 || len(got.Shapes.Sorted) != 200 {
		t.Fatalf("keys table: %d rows, %d sorted values; want 200", got.Shapes.Rows, len(got.Shapes.Sorted))
	}
	for i := 1; i < len(got.Shapes.Sorted); i++ {
		if got.Shapes.Sorted[i] < got.Shapes.Sorted[i-1] {
			t.Fatalf("after a click on its heading the newest column is not ascending at row %d: %v then %v", i, got.Shapes.Sorted[i-1], got.Shapes.Sorted[i])
		}
	}
	v, size := blankness(t, got.PNG)
	if size.X < winW/2 || size.Y < winH/2 {
		t.Errorf("screenshot %v, want about %dx%d", size, winW, winH)
	}
	if v < 50 {
		t.Errorf("screenshot grey-level variance %.1f: the page looks blank", v)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	_ = os.WriteFile(shot, got.PNG, 0o644)
	t.Logf("screenshot %v, grey-level variance %.0f", size, v)
}

// TestBrowserCheckCatchesErrors: the same checks on a broken page report
// its exception, its console error, its failed image and its request
// elsewhere, and a blank screenshot reads as blank: the test above can
// fail.
func TestBrowserCheckCatchesErrors(t *testing.T) {
	bin := browser.FindForTest(t)
	path := filepath.Join(t.TempDir(), "broken.html")
	const broken = `<!DOCTYPE html><html><head><title>broken</title></head><body>
<img src="data:image/png;base64,AAAA" width="0" height="0">
<img src="http://127.0.0.1:9/x.png">
<script>console.error("boom"); nosuchFunction();</script></body></html>`
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	got := openPage(t, bin, path)
	all := strings.Join(got.Errors, "\n")
	for _, want := range []string{"boom", "nosuchFunction"} {
		if !strings.Contains(all, want) {
			t.Errorf("errors caught %q, want one naming %q", all, want)
		}
	}
	foreign := false
	for _, u := range got.Requests {
		foreign = foreign || strings.HasPrefix(u, "http://127.0.0.1:9/")
	}
	if !foreign {
		t.Errorf("requests seen %v, want the http one", got.Requests)
	}
	if len(got.Shapes.Imgs) != 2 || got.Shapes.Imgs[0][0] != 0 {
		t.Errorf("images measured %v, want 2 with the first of natural width 0", got.Shapes.Imgs)
	}
	if v, _ := blankness(t, got.PNG); v >= 50 {
		t.Errorf("a blank page's screenshot has variance %.1f, want it under the threshold", v)
	}
}
