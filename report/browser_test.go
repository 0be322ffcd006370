package report

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The browser test opens a report in a real browser, headless Chromium,
// driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
// JSON messages ending in a NUL byte, commands on fd 3, replies on fd 4),
// which needs nothing but the standard library. It records every console
// message, uncaught exception, log entry and request while the page
// loads, then measures every <svg> and <img> and takes a screenshot.

// browserNames are the executables tried, in order; GCCL_BROWSER names
// another.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// findBrowser returns a Chromium to run, or skips the test naming what
// it looked for. With GCCL_REQUIRE_BROWSER=1 (CI sets it, having
// installed chromium) a missing browser fails the test instead.
func findBrowser(t *testing.T) string {
	t.Helper()
	names := browserNames
	if b := os.Getenv("GCCL_BROWSER"); b != "" {
		names = []string{b}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("no browser: none of %s found in PATH (install Debian's chromium: apt-get install chromium; or set GCCL_BROWSER)", strings.Join(names, ", "))
	if os.Getenv("GCCL_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + "; GCCL_REQUIRE_BROWSER=1 asks for one")
	}
	t.Skip(msg)
	return ""
}

// Window size of the browser, CSS pixels.
const winW, winH = 1280, 1600

// pageCheck is what the browser saw of a page.
type pageCheck struct {
	Errors   []string // console errors, exceptions, error log entries
	Requests []string // every URL the page asked for
	Shapes   shapes   // what the page's script measured
	PNG      []byte   // the screenshot
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
  return JSON.stringify(out);
})()`

// cdpMsg is a DevTools message: a reply (ID set) or an event (Method).
type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// cdp is one browser driven over its pipe. Only the test's goroutine
// uses it; the reader goroutine hands messages over msgs.
type cdp struct {
	cmd    *exec.Cmd
	toB    io.WriteCloser // fd 3 of the browser
	msgs   chan cdpMsg    // written by the reader goroutine, closed at EOF
	events []cdpMsg       // events seen while waiting for replies
	next   int
	stderr bytes.Buffer
}

func startBrowser(t *testing.T, bin string) *cdp {
	t.Helper()
	cmdR, cmdW, err := os.Pipe() // browser reads commands from cmdR
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe() // browser writes replies to outW
	if err != nil {
		t.Fatal(err)
	}
	c := &cdp{toB: cmdW, msgs: make(chan cdpMsg, 256)}
	c.cmd = exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), fmt.Sprintf("--window-size=%d,%d", winW, winH),
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--hide-scrollbars", "about:blank")
	c.cmd.ExtraFiles = []*os.File{cmdR, outW}
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	cmdR.Close()
	outW.Close()
	go func() {
		defer close(c.msgs)
		r := bufio.NewReader(outR)
		for {
			b, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m cdpMsg
			if json.Unmarshal(b[:len(b)-1], &m) == nil {
				c.msgs <- m
			}
		}
	}()
	t.Cleanup(func() {
		c.toB.Close()
		done := make(chan error, 1)
		go func() { done <- c.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-done
		}
		outR.Close()
	})
	return c
}

// call sends a command and waits for its reply, keeping the events that
// come first.
func (c *cdp) call(method, session string, params any, timeout time.Duration) (json.RawMessage, error) {
	c.next++
	id := c.next
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if _, err := c.toB.Write(append(b, 0)); err != nil {
		return nil, fmt.Errorf("%s: writing to the browser: %v", method, err)
	}
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return nil, fmt.Errorf("%s: the browser closed its pipe; its stderr ends:\n%s", method, tail(c.stderr.String()))
			}
			if m.ID == id {
				if m.Error != nil {
					return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
				}
				return m.Result, nil
			}
			if m.Method != "" {
				c.events = append(c.events, m)
			}
		case <-deadline:
			return nil, fmt.Errorf("%s: no reply within %v", method, timeout)
		}
	}
}

// waitEvent waits for an event of the session, keeping the others.
func (c *cdp) waitEvent(method, session string, timeout time.Duration) error {
	for _, e := range c.events {
		if e.Method == method && e.SessionID == session {
			return nil
		}
	}
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return fmt.Errorf("waiting for %s: the browser closed its pipe", method)
			}
			if m.Method != "" {
				c.events = append(c.events, m)
			}
			if m.Method == method && m.SessionID == session {
				return nil
			}
		case <-deadline:
			return fmt.Errorf("no %s within %v", method, timeout)
		}
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// openPage loads the HTML file at path in a fresh browser and reports
// what it saw.
func openPage(t *testing.T, bin, path string) pageCheck {
	t.Helper()
	c := startBrowser(t, bin)
	const wait = 20 * time.Second
	must := func(r json.RawMessage, err error) json.RawMessage {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(must(c.call("Target.createTarget", "", map[string]any{"url": "about:blank"}, wait)), &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(must(c.call("Target.attachToTarget", "", map[string]any{"targetId": target.TargetID, "flatten": true}, wait)), &att)
	s := att.SessionID
	for _, domain := range []string{"Runtime", "Log", "Page", "Network"} {
		must(c.call(domain+".enable", s, nil, wait))
	}
	u := (&url.URL{Scheme: "file", Path: path}).String()
	must(c.call("Page.navigate", s, map[string]any{"url": u}, wait))
	if err := c.waitEvent("Page.loadEventFired", s, wait); err != nil {
		t.Fatal(err)
	}
	var eval struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	_ = json.Unmarshal(must(c.call("Runtime.evaluate", s, map[string]any{"expression": measureJS, "returnByValue": true}, wait)), &eval)
	var out pageCheck
	if len(eval.ExceptionDetails) > 0 {
		t.Fatalf("the measuring script failed: %s", eval.ExceptionDetails)
	}
	if err := json.Unmarshal([]byte(eval.Result.Value), &out.Shapes); err != nil {
		t.Fatalf("the measuring script's result %q: %v", eval.Result.Value, err)
	}
	var shot struct {
		Data string `json:"data"`
	}
	_ = json.Unmarshal(must(c.call("Page.captureScreenshot", s, map[string]any{"format": "png"}, wait)), &shot)
	var err error
	if out.PNG, err = base64.StdEncoding.DecodeString(shot.Data); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	_, _ = c.call("Browser.close", "", nil, 5*time.Second) // the browser may exit before it replies
	out.Errors, out.Requests = pageEvents(c.events, s)
	return out
}

// pageEvents picks the session's errors and requests out of the events.
func pageEvents(events []cdpMsg, session string) (errs, reqs []string) {
	for _, e := range events {
		if e.SessionID != session {
			continue
		}
		switch e.Method {
		case "Runtime.exceptionThrown":
			var p struct {
				Details struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			_ = json.Unmarshal(e.Params, &p)
			errs = append(errs, "exception: "+p.Details.Text+" "+p.Details.Exception.Description)
		case "Runtime.consoleAPICalled":
			var p struct {
				Type string            `json:"type"`
				Args []json.RawMessage `json:"args"`
			}
			_ = json.Unmarshal(e.Params, &p)
			if p.Type == "error" || p.Type == "assert" {
				errs = append(errs, fmt.Sprintf("console.%s: %s", p.Type, p.Args))
			}
		case "Log.entryAdded":
			var p struct {
				Entry struct {
					Level, Source, Text, URL string
				} `json:"entry"`
			}
			_ = json.Unmarshal(e.Params, &p)
			if p.Entry.Level == "error" {
				errs = append(errs, fmt.Sprintf("log (%s): %s %s", p.Entry.Source, p.Entry.Text, p.Entry.URL))
			}
		case "Network.requestWillBeSent":
			var p struct {
				Request struct {
					URL string `json:"url"`
				} `json:"request"`
			}
			_ = json.Unmarshal(e.Params, &p)
			reqs = append(reqs, p.Request.URL)
		}
	}
	return errs, reqs
}

// blankness is the variance of the screenshot's grey levels (0 to 255)
// over a grid of pixels, and its size.
func blankness(t *testing.T, b []byte) (variance float64, size image.Point) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	r := img.Bounds()
	var sum, sq, n float64
	for y := r.Min.Y; y < r.Max.Y; y += 2 {
		for x := r.Min.X; x < r.Max.X; x += 2 {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			g := (0.299*float64(cr) + 0.587*float64(cg) + 0.114*float64(cb)) / 257
			sum, sq, n = sum+g, sq+g*g, n+1
		}
	}
	m := sum / n
	return sq/n - m*m, r.Size()
}

// TestBrowserRendersReport: a report of 200 keys x 100 runs with a gate
// loads in headless Chromium with no console error and no request
// beyond the file itself; every chart renders with a size; the tables
// sort; the screenshot is a picture, not a blank page.
func TestBrowserRendersReport(t *testing.T) {
	bin := findBrowser(t)
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
	for _, u := range got.Requests {
		if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s: it must request nothing beyond itself", u)
		}
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
	bin := findBrowser(t)
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
