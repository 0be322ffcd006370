// Package browser drives a real browser, headless Chromium, for the tests
// that check what gccl writes opens in one: the HTML report (report) and
// the step-timeline traces in a trace viewer (tracestat).
//
// It speaks the DevTools protocol over a pipe (--remote-debugging-pipe:
// JSON messages ending in a NUL byte, commands on the browser's fd 3,
// replies and events on its fd 4), which needs nothing but the standard
// library: no port, no WebSocket. A page records every console message,
// uncaught exception, log entry, request and JavaScript dialog it sees,
// so a test can say the page loaded cleanly and stayed off the network.
package browser

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/internal/syncbuf"
)

// Names are the executables Find tries, in order; GCCL_BROWSER names
// another.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// ErrNotFound is Find's error when no browser is installed: tests skip on
// it, unless Required.
var ErrNotFound = errors.New("no browser")

// Find returns the path of a Chromium to run: GCCL_BROWSER's, or the
// first of Names in PATH. Its error says what it looked for and how to
// get one.
func Find() (string, error) {
	names := Names
	if b := os.Getenv("GCCL_BROWSER"); b != "" {
		names = []string{b}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: none of %s found in PATH (install Debian's chromium: apt-get install chromium; or set GCCL_BROWSER)", ErrNotFound, strings.Join(names, ", "))
}

// Required reports whether GCCL_REQUIRE_BROWSER=1: CI sets it, having
// installed what the browser tests need, so that their absence fails
// those tests instead of skipping them.
func Required() bool { return os.Getenv("GCCL_REQUIRE_BROWSER") == "1" }

// FindForTest returns a Chromium to run, or skips the test naming what it
// looked for; with GCCL_REQUIRE_BROWSER=1 a missing browser fails it.
func FindForTest(t testing.TB) string {
	t.Helper()
	bin, err := Find()
	if err != nil {
		if Required() {
			t.Fatal(err.Error() + "; GCCL_REQUIRE_BROWSER=1 asks for one")
		}
		t.Skip(err.Error())
	}
	return bin
}

// Options are the browser's window and its profile.
type Options struct {
	Width, Height int    // window size, CSS pixels
	ProfileDir    string // --user-data-dir: a fresh directory the caller removes
	Args          []string
}

// message is a DevTools message: a reply (ID set) or an event (Method).
type message struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Browser is one running browser. It is not safe for concurrent use: one
// goroutine (the test's) calls its methods; the reader goroutine hands
// messages over msgs.
type Browser struct {
	cmd    *exec.Cmd
	toB    io.WriteCloser // the browser's fd 3
	fromB  io.Closer      // our end of its fd 4
	msgs   chan message   // written by the reader goroutine, closed at EOF
	events []message      // events seen while waiting for replies
	next   int
	// stderr is written by exec's copier goroutine and read by call for
	// its error message while the browser may still write: syncbuf locks.
	stderr syncbuf.Buffer
}

// Start runs the browser at bin, headless, on about:blank.
func Start(bin string, o Options) (*Browser, error) {
	cmdR, cmdW, err := os.Pipe() // the browser reads commands from cmdR
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe() // the browser writes replies to outW
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return nil, err
	}
	b := &Browser{toB: cmdW, fromB: outR, msgs: make(chan message, 256)}
	args := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--remote-debugging-pipe", "--user-data-dir=" + o.ProfileDir, fmt.Sprintf("--window-size=%d,%d", o.Width, o.Height),
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--hide-scrollbars"}
	args = append(append(args, o.Args...), "about:blank")
	b.cmd = exec.Command(bin, args...)
	b.cmd.ExtraFiles = []*os.File{cmdR, outW}
	b.cmd.Stderr = &b.stderr
	err = b.cmd.Start()
	cmdR.Close()
	outW.Close()
	if err != nil {
		cmdW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s: %v", bin, err)
	}
	go func() {
		defer close(b.msgs)
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m message
			if json.Unmarshal(line[:len(line)-1], &m) == nil {
				b.msgs <- m
			}
		}
	}()
	return b, nil
}

// Close asks the browser to exit, kills it if it has not within 10 s,
// and waits for it.
func (b *Browser) Close() {
	_, _ = b.call("Browser.close", "", nil, 5*time.Second) // the browser may exit before it replies
	b.toB.Close()
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
	b.fromB.Close()
}

// send writes one command and returns its id.
func (b *Browser) send(method, session string, params any) (int, error) {
	b.next++
	msg := map[string]any{"id": b.next, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return 0, err
	}
	if _, err := b.toB.Write(append(data, 0)); err != nil {
		return 0, fmt.Errorf("%s: writing to the browser: %v", method, err)
	}
	return b.next, nil
}

// keep records an event. A JavaScript dialog (alert, confirm) blocks its
// page's script until answered, so it is dismissed at once; the page's
// Dialogs still lists it.
func (b *Browser) keep(m message) {
	b.events = append(b.events, m)
	if m.Method == "Page.javascriptDialogOpening" {
		_, _ = b.send("Page.handleJavaScriptDialog", m.SessionID, map[string]any{"accept": true})
	}
}

// call sends a command and waits for its reply, keeping the events that
// come first.
func (b *Browser) call(method, session string, params any, timeout time.Duration) (json.RawMessage, error) {
	id, err := b.send(method, session, params)
	if err != nil {
		return nil, err
	}
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-b.msgs:
			if !ok {
				return nil, fmt.Errorf("%s: the browser closed its pipe; its stderr ends:\n%s", method, tail(b.stderr.String()))
			}
			if m.ID == id {
				if m.Error != nil {
					return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
				}
				return m.Result, nil
			}
			if m.Method != "" {
				b.keep(m)
			}
		case <-deadline:
			return nil, fmt.Errorf("%s: no reply within %v", method, timeout)
		}
	}
}

// waitEvent waits for an event of the session, keeping the others.
func (b *Browser) waitEvent(method, session string, timeout time.Duration) error {
	for _, e := range b.events {
		if e.Method == method && e.SessionID == session {
			return nil
		}
	}
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-b.msgs:
			if !ok {
				return fmt.Errorf("waiting for %s: the browser closed its pipe", method)
			}
			if m.Method != "" {
				b.keep(m)
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

// Page is a tab of the browser, its events recorded from before it
// navigated.
type Page struct {
	b       *Browser
	session string
	timeout time.Duration // for each command
}

// Open opens a tab, turns on the events a check needs, navigates to u and
// waits for its load event; timeout bounds each step.
func (b *Browser) Open(u string, timeout time.Duration) (*Page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	r, err := b.call("Target.createTarget", "", map[string]any{"url": "about:blank"}, timeout)
	if err != nil {
		return nil, err
	}
	_ = json.Unmarshal(r, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if r, err = b.call("Target.attachToTarget", "", map[string]any{"targetId": target.TargetID, "flatten": true}, timeout); err != nil {
		return nil, err
	}
	_ = json.Unmarshal(r, &att)
	p := &Page{b: b, session: att.SessionID, timeout: timeout}
	for _, domain := range []string{"Runtime", "Log", "Page", "Network"} {
		if _, err := b.call(domain+".enable", p.session, nil, timeout); err != nil {
			return nil, err
		}
	}
	if _, err := b.call("Page.navigate", p.session, map[string]any{"url": u}, timeout); err != nil {
		return nil, err
	}
	if err := b.waitEvent("Page.loadEventFired", p.session, timeout); err != nil {
		return nil, err
	}
	return p, nil
}

// FileURL is the file:// URL of the absolute path, with a fragment if
// given (a fragment is not escaped: pages read it raw).
func FileURL(path, fragment string) string {
	u := (&url.URL{Scheme: "file", Path: path}).String()
	if fragment != "" {
		u += "#" + fragment
	}
	return u
}

// Eval evaluates the expression in the page, awaiting it if it is a
// promise, and returns its value as JSON. A thrown exception is an error.
func (p *Page) Eval(expr string) (json.RawMessage, error) {
	r, err := p.b.call("Runtime.evaluate", p.session, map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, p.timeout)
	if err != nil {
		return nil, err
	}
	var ev struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(r, &ev); err != nil {
		return nil, err
	}
	if len(ev.ExceptionDetails) > 0 {
		return nil, fmt.Errorf("the script threw: %s", ev.ExceptionDetails)
	}
	return ev.Result.Value, nil
}

// Screenshot is a PNG of the page's window.
func (p *Page) Screenshot() ([]byte, error) {
	r, err := p.b.call("Page.captureScreenshot", p.session, map[string]any{"format": "png"}, p.timeout)
	if err != nil {
		return nil, err
	}
	var shot struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(r, &shot); err != nil {
		return nil, err
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return nil, fmt.Errorf("screenshot: %v", err)
	}
	return png, nil
}

// Drain takes in the events that have arrived since the last command
// (a page's script runs on after its load event), waiting at most d.
func (p *Page) Drain(d time.Duration) {
	deadline := time.After(d)
	for {
		select {
		case m, ok := <-p.b.msgs:
			if !ok {
				return
			}
			if m.Method != "" {
				p.b.keep(m)
			}
		case <-deadline:
			return
		}
	}
}

// Seen is what the page did, as its events told.
type Seen struct {
	Errors   []string // console errors and assertions, exceptions, error log entries
	Warnings []string // console warnings
	Logs     []string // other console messages (log, info, debug)
	Dialogs  []string // JavaScript dialogs: "alert: message"
	Requests []string // every URL the page asked for
}

// Seen sorts the page's events recorded so far.
func (p *Page) Seen() Seen {
	var s Seen
	for _, e := range p.b.events {
		if e.SessionID != p.session {
			continue
		}
		switch e.Method {
		case "Runtime.exceptionThrown":
			var v struct {
				Details struct {
					Text      string `json:"text"`
					Exception struct {
						Description string `json:"description"`
					} `json:"exception"`
				} `json:"exceptionDetails"`
			}
			_ = json.Unmarshal(e.Params, &v)
			s.Errors = append(s.Errors, "exception: "+v.Details.Text+" "+v.Details.Exception.Description)
		case "Runtime.consoleAPICalled":
			var v struct {
				Type string            `json:"type"`
				Args []json.RawMessage `json:"args"`
			}
			_ = json.Unmarshal(e.Params, &v)
			msg := fmt.Sprintf("console.%s: %s", v.Type, v.Args)
			switch v.Type {
			case "error", "assert":
				s.Errors = append(s.Errors, msg)
			case "warning":
				s.Warnings = append(s.Warnings, msg)
			default:
				s.Logs = append(s.Logs, msg)
			}
		case "Log.entryAdded":
			var v struct {
				Entry struct {
					Level, Source, Text, URL string
				} `json:"entry"`
			}
			_ = json.Unmarshal(e.Params, &v)
			if v.Entry.Level == "error" {
				s.Errors = append(s.Errors, fmt.Sprintf("log (%s): %s %s", v.Entry.Source, v.Entry.Text, v.Entry.URL))
			}
		case "Page.javascriptDialogOpening":
			var v struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(e.Params, &v)
			s.Dialogs = append(s.Dialogs, v.Type+": "+v.Message)
		case "Network.requestWillBeSent":
			var v struct {
				Request struct {
					URL string `json:"url"`
				} `json:"request"`
			}
			_ = json.Unmarshal(e.Params, &v)
			s.Requests = append(s.Requests, v.Request.URL)
		}
	}
	return s
}

// Remote returns the requests for anything beyond the machine: any but
// file: and data: URLs.
func (s Seen) Remote() []string {
	var out []string
	for _, u := range s.Requests {
		if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
			out = append(out, u)
		}
	}
	return out
}

// Blankness is the variance of a PNG's grey levels (0 to 255) over a grid
// of every other pixel, and its size: a blank page's is near 0.
func Blankness(b []byte) (variance float64, size image.Point, err error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return 0, image.Point{}, fmt.Errorf("the screenshot is not a PNG: %v", err)
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
	return sq/n - m*m, r.Size(), nil
}
