package tracestat

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/browser"
	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/steptrace"
	"github.com/gccl/gccl/lib/tef"
	"github.com/gccl/gccl/lib/tuning"
)

// The browser tests open gccl's traces in a real trace viewer in a real
// browser: speedscope (github.com/jlfwong/speedscope, MIT), an offline
// viewer that imports the Trace Event Format, in headless Chromium
// (internal/browser). Debian's Chromium has no chrome://tracing (its
// internal pages are off and the trace viewer is not built in) and
// Perfetto's UI needs the network; speedscope runs from a file.
//
// speedscope 1.25.0 opens a profile named in its URL's fragment,
// #localProfilePath=FILE.js, FILE.js calling
// speedscope.loadFileFromBase64(name, base64 of the file) (what its own
// command line does). It imports a trace as one profile per (pid, tid)
// holding B, E or X events, named "process (pid P), thread (tid T)" from
// the metadata events; sets the title to "<file> - speedscope"; shows
// "(i/N)" in its toolbar for N profiles; and fails in one of three ways:
// an exception in the import shows "Something went wrong.", an
// unrecognised file or one with no profile an alert, and events that do
// not nest (an end without its begin, overlaps) console warnings.

// speedscopeVersion is the release the test and .ci/run pin.
const speedscopeVersion = "1.25.0"

// viewerIndex returns speedscope's index.html under GCCL_TRACE_VIEWER (the
// unpacked npm package, or its dist/release), or skips the test saying
// how to get it; with GCCL_REQUIRE_BROWSER=1 (CI) it fails instead.
func viewerIndex(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GCCL_TRACE_VIEWER")
	msg := "GCCL_TRACE_VIEWER is not set"
	if dir != "" {
		for _, p := range []string{"index.html", "dist/release/index.html", "package/dist/release/index.html"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				abs, err := filepath.Abs(filepath.Join(dir, p))
				if err != nil {
					t.Fatal(err)
				}
				return abs
			}
		}
		msg = fmt.Sprintf("GCCL_TRACE_VIEWER=%s holds no index.html, dist/release/index.html or package/dist/release/index.html", dir)
	}
	msg += fmt.Sprintf("; it names the speedscope viewer the trace is opened in: npm pack speedscope@%s && tar xzf speedscope-%s.tgz && export GCCL_TRACE_VIEWER=$PWD/package (or GCCL_TRACE_VIEWER=$(.ci/trace-viewer.sh), which checks its sha512 and caches it, as .ci/run does)", speedscopeVersion, speedscopeVersion)
	if browser.Required() {
		t.Fatal(msg + "; GCCL_REQUIRE_BROWSER=1 asks for it")
	}
	t.Skip(msg)
	return ""
}

// viewerState is what the viewer's page shows.
type viewerState struct {
	Title  string   `json:"title"`
	Lines  []string `json:"lines"`  // the page's text, by line
	Canvas int      `json:"canvas"` // <canvas> elements drawn on (with a size)
}

const viewerStateJS = `(function () {
  var canvas = 0;
  document.querySelectorAll("canvas").forEach(function (c) { if (c.width > 0 && c.height > 0) canvas++; });
  return {title: document.title, lines: (document.body ? document.body.innerText : "").split("\n"), canvas: canvas};
})()`

// failed reports speedscope's error panel.
func (s viewerState) failed() bool {
	return slices.ContainsFunc(s.Lines, func(l string) bool { return strings.Contains(l, "Something went wrong") })
}

// toolbarProfile matches the toolbar's profile: the name speedscope gives
// a (pid, tid) and, with several profiles, "(i/N)".
var toolbarProfile = regexp.MustCompile(`^(.*\btid -?\d+\)?)(?: \((\d+)/(\d+)\))?$`)

// profile returns the toolbar's profile name and the number of profiles
// it counts; ok is false before the viewer shows a profile.
func (s viewerState) profile() (name string, profiles int, ok bool) {
	for _, l := range s.Lines {
		m := toolbarProfile.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		if m[3] == "" {
			return m[1], 1, true
		}
		n, _ := strconv.Atoi(m[3])
		return m[1], n, true
	}
	return "", 0, false
}

// listProfilesJS opens the toolbar's profile list (a hover on the
// profile's name opens it) and returns the page's text lines once the
// list shows its first row ("1\tname\tweight"), or after 20 s.
const listProfilesJS = `(function () {
  var sp = Array.from(document.querySelectorAll("span")).filter(function (e) { return /\(\d+\/\d+\)$/.test(e.textContent) && e.children.length > 0; });
  if (sp.length === 0) return [];
  sp[0].dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
  var start = Date.now();
  return new Promise(function (done) {
    (function poll() {
      var lines = document.body.innerText.split("\n");
      if (lines.some(function (l) { return l.indexOf("1\t") === 0; }) || Date.now() - start > 20000) { done(lines); return; }
      setTimeout(poll, 50);
    })();
  });
})()`

// opened is what the browser saw of a trace opened in the viewer.
type opened struct {
	State   viewerState
	Seen    browser.Seen
	PNG     []byte
	Listed  []string // the page's lines with the profile list open
	Elapsed time.Duration
}

// Window size of the browser, CSS pixels.
const winW, winH = 1280, 800

// openTrace opens the trace data, named name, in the viewer at index in
// a tab of b, and waits (polling) until the viewer shows a profile,
// fails, or raises a dialog.
func openTrace(t *testing.T, b *browser.Browser, index, name string, data []byte) opened {
	t.Helper()
	js := filepath.Join(t.TempDir(), name+".js")
	src := fmt.Sprintf("speedscope.loadFileFromBase64(%q, %q)", name, base64.StdEncoding.EncodeToString(data))
	if err := os.WriteFile(js, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	page, err := b.Open(browser.FileURL(index, "localProfilePath="+js), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out opened
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, err := page.Eval(viewerStateJS)
		if err != nil {
			t.Fatal(err)
		}
		out.State = viewerState{}
		if err := json.Unmarshal(v, &out.State); err != nil {
			t.Fatalf("the viewer's state %s: %v", v, err)
		}
		out.Seen = page.Seen()
		_, _, shown := out.State.profile()
		if shown || out.State.failed() || len(out.Seen.Dialogs) > 0 || len(out.Seen.Errors) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the viewer neither showed %s nor failed within 60 s; its page reads %q", name, out.State.Lines)
		}
		page.Drain(100 * time.Millisecond)
	}
	out.Elapsed = time.Since(start)
	if out.PNG, err = page.Screenshot(); err != nil {
		t.Fatal(err)
	}
	v, err := page.Eval(listProfilesJS)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(v, &out.Listed); err != nil {
		t.Fatalf("the profile list %s: %v", v, err)
	}
	out.Seen = page.Seen()
	return out
}

// embeddedTrace records the embedded stack's step timeline of 3 ranks
// on 2 channels (allreduce of 8 B, 4 KiB and 256 KiB forced onto Ring,
// then the same on the stack's own choice, then a ring of sends and
// receives in a group) and writes it as perf does.
func embeddedTrace(t *testing.T) []byte {
	t.Helper()
	const n = 3
	comms, err := ccl.InitAll(n, ccl.Config{NChannels: 2, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			c.Destroy()
		}
	}()
	snaps := make([]steptrace.Snapshot, n)
	errs := make(chan error, n)
	for _, c := range comms {
		go func() { errs <- traceRank(c, &snaps[c.Rank()]) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	var buf bytes.Buffer
	if err := tef.Write(&buf, steptrace.File(snaps, steptrace.Clock{}, nil)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// traceRank runs one rank's traced calls and takes its timeline.
func traceRank(c *ccl.Comm, snap *steptrace.Snapshot) error {
	ring, err := tuning.ParseAlgoReq("Ring")
	if err != nil {
		return err
	}
	if err := c.StartTrace(0); err != nil {
		return err
	}
	for _, f := range []ccl.Forced{{Algo: ring}, {}} {
		if err := c.Force(f); err != nil {
			return err
		}
		for _, count := range []int{2, 1 << 10, 64 << 10} {
			send, recv := make([]byte, 4*count), make([]byte, 4*count)
			if err := c.AllReduce(send, recv, count, ccl.Float32, ccl.Sum); err != nil {
				return err
			}
		}
	}
	const count = 4 << 10
	send, recv := make([]byte, 4*count), make([]byte, 4*count)
	next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
	if err := c.GroupStart(); err != nil {
		return err
	}
	if err := c.Send(send, count, ccl.Float32, next); err != nil {
		return err
	}
	if err := c.Recv(recv, count, ccl.Float32, prev); err != nil {
		return err
	}
	if err := c.GroupEnd(); err != nil {
		return err
	}
	if err := c.Synchronize(); err != nil {
		return err
	}
	if err := c.StopTrace(); err != nil {
		return err
	}
	s, err := c.TakeTrace()
	*snap = s
	return err
}

// ncclTrace is the NCCL profiler plugin's trace in testdata.
func ncclTrace(t *testing.T) []byte {
	t.Helper()
	in, err := os.Open("testdata/nccl_net_op.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// profileNames are the names speedscope gives the trace's profiles: one
// per (pid, tid) holding B, E or X events, "process (pid P), thread (tid
// T)" from the metadata events.
func profileNames(t *testing.T, data []byte) []string {
	t.Helper()
	f, err := tef.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	procs, threads := map[int]string{}, map[tef.Track]string{}
	tracks := map[tef.Track]bool{}
	for _, e := range f.TraceEvents {
		name, _ := e.Args["name"].(string)
		switch {
		case e.Ph == "M" && e.Name == "process_name":
			procs[e.Pid] = name
		case e.Ph == "M" && e.Name == "thread_name":
			threads[tef.Track{Pid: e.Pid, Tid: e.Tid}] = name
		case e.Ph == "B" || e.Ph == "E" || e.Ph == "X":
			tracks[tef.Track{Pid: e.Pid, Tid: e.Tid}] = true
		}
	}
	var names []string
	for tr := range tracks {
		p, t := procs[tr.Pid], threads[tr]
		switch {
		case p != "" && t != "":
			names = append(names, fmt.Sprintf("%s (pid %d), %s (tid %d)", p, tr.Pid, t, tr.Tid))
		case p != "":
			names = append(names, fmt.Sprintf("%s (pid %d, tid %d)", p, tr.Pid, tr.Tid))
		case t != "":
			names = append(names, fmt.Sprintf("%s (pid %d, tid %d)", t, tr.Pid, tr.Tid))
		default:
			names = append(names, fmt.Sprintf("pid %d, tid %d", tr.Pid, tr.Tid))
		}
	}
	slices.Sort(names)
	return names
}

// problems lists why the viewer did not open the trace name cleanly with
// the profiles want; none when it did. Every warning counts: speedscope
// warns of events that do not nest on their track (an end that matches
// no open event, an event still open at the end).
func (o opened) problems(name string, want []string) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, e := range o.Seen.Errors {
		add("browser: %s", e)
	}
	for _, d := range o.Seen.Dialogs {
		add("the viewer raised a dialog: %s", d)
	}
	for _, w := range o.Seen.Warnings {
		add("the viewer warned: %s", w)
	}
	for _, u := range o.Seen.Remote() {
		add("the page requested %s: it must request nothing beyond the machine", u)
	}
	if o.State.failed() {
		add("the viewer says: Something went wrong")
	}
	if o.State.Title != name+" - speedscope" {
		add("document title %q, want %q (set once the import succeeds)", o.State.Title, name+" - speedscope")
	}
	first, count, ok := o.State.profile()
	if !ok {
		add("the toolbar shows no profile; the page reads %q", o.State.Lines)
		return out
	}
	if count != len(want) {
		add("the toolbar counts %d profiles (%s), want %d: one per (pid, tid) holding events", count, first, len(want))
	}
	if len(want) > 1 {
		var listed []string
		for _, l := range o.Listed { // "i\tname\tweight"
			if f := strings.Split(l, "\t"); len(f) == 3 && slices.Contains(want, f[1]) {
				listed = append(listed, f[1])
			}
		}
		slices.Sort(listed)
		if !slices.Equal(listed, want) {
			add("the profile list names %q, want %q", listed, want)
		}
	}
	if o.State.Canvas == 0 {
		add("no canvas drawn")
	}
	return out
}

// startViewerBrowser finds the viewer and the browser (or skips) and
// starts the browser.
func startViewerBrowser(t *testing.T) (*browser.Browser, string) {
	t.Helper()
	index := viewerIndex(t)
	bin := browser.FindForTest(t)
	b, err := browser.Start(bin, browser.Options{Width: winW, Height: winH, ProfileDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b, index
}

// TestBrowserOpensTraces opens the embedded stack's trace (recorded here,
// written by lib/tef) and the NCCL profiler plugin's (testdata) in
// speedscope in headless Chromium: each imports with no error, exception
// or dialog and no request beyond the machine; the title names the file;
// the toolbar counts one profile per (pid, tid) holding events and its
// list names them as the metadata events do; the flame chart's canvas is
// drawn and the screenshot is not blank; and it warns of no event that
// does not nest. (speedscope adds ts and dur as JavaScript numbers: with
// microseconds in nanosecond decimals, 3400257837.622, two equal
// boundaries came out an ulp apart and it warned of events overlapping;
// gccl writes them on tef's grid of 1/1024 us, which adds exactly.)
func TestBrowserOpensTraces(t *testing.T) {
	b, index := startViewerBrowser(t)
	traces := []struct {
		name string
		data []byte
	}{
		{"embedded.json", embeddedTrace(t)},
		{"nccl_net_op.json", ncclTrace(t)},
	}
	for _, tr := range traces {
		want := profileNames(t, tr.data)
		o := openTrace(t, b, index, tr.name, tr.data)
		for _, p := range o.problems(tr.name, want) {
			t.Errorf("%s: %s", tr.name, p)
		}
		v, size, err := browser.Blankness(o.PNG)
		if err != nil {
			t.Fatal(err)
		}
		if size.X < winW/2 || size.Y < winH/2 || v < 50 {
			t.Errorf("%s: screenshot %v, grey-level variance %.1f: want about %dx%d and not blank", tr.name, size, v, winW, winH)
		}
		t.Logf("%s: %d profiles shown in %v; screenshot %v, variance %.0f",
			tr.name, len(want), o.Elapsed.Round(time.Millisecond), size, v)
	}
}

// TestBrowserTraceCheckCatchesBroken: the checks above fail on broken
// traces, each in the way speedscope reports it: a file that is not a
// trace raises its "Unrecognized format" alert; an end without its begin,
// and two events that overlap without nesting, import with its nesting
// warnings (it draws them anyway, so only its warnings tell).
func TestBrowserTraceCheckCatchesBroken(t *testing.T) {
	b, index := startViewerBrowser(t)
	meta := `{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"rank 0"}},{"name":"thread_name","ph":"M","pid":0,"tid":0,"args":{"name":"channel 0"}}`
	cases := []struct {
		name, data, want string
	}{
		{"garbage.json", "this is not a trace", "Unrecognized format"},
		{"end_without_begin.json", `{"traceEvents":[` + meta + `,{"name":"send","ph":"B","ts":1,"pid":0,"tid":0},{"name":"send","ph":"E","ts":2,"pid":0,"tid":0},{"name":"recv","ph":"E","ts":3,"pid":0,"tid":0}]}`, "stack was empty"},
		{"overlap.json", `{"traceEvents":[` + meta + `,{"name":"send","ph":"X","ts":1,"dur":10,"pid":0,"tid":0},{"name":"wait","ph":"X","ts":5,"dur":10,"pid":0,"tid":0}]}`, "Tried to end"},
	}
	for _, c := range cases {
		o := openTrace(t, b, index, c.name, []byte(c.data))
		probs := o.problems(c.name, []string{"rank 0 (pid 0), channel 0 (tid 0)"})
		if !strings.Contains(strings.Join(probs, "\n"), c.want) {
			t.Errorf("%s: the check found %q, want a problem naming %q", c.name, probs, c.want)
		}
		t.Logf("%s: %q", c.name, probs)
	}
}
