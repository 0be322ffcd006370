package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/tef"
)

// ringTrace writes a ring allreduce of n ranks on 2 channels, ops
// operations, to one file per process of perProc ranks (as --np writes
// them): rank slow works 4 times longer per step, the others wait on it.
// Each step of rank r waits for its predecessor's previous step, lat us
// after it ended. It returns the files.
func ringTrace(t *testing.T, dir string, n, perProc, ops, slow int) []string {
	return ringTraceLate(t, dir, n, perProc, ops, slow, -1, 0)
}

// ringTraceLate is ringTrace with rank late starting every operation late
// us after the others.
func ringTraceLate(t *testing.T, dir string, n, perProc, ops, slow, late int, by float64) []string {
	t.Helper()
	const lat = 0.5
	steps := 2 * (n - 1)
	work := func(r int) float64 {
		if r == slow {
			return 8
		}
		return 2
	}
	evs := make([][]tef.Event, n)
	for r := 0; r < n; r++ {
		evs[r] = append(evs[r], tef.ProcessName(r, fmt.Sprintf("rank %d", r)))
	}
	t0 := 0.0
	for o := 0; o < ops; o++ {
		end := make([]float64, n)
		for ch := 0; ch < 2; ch++ {
			fin := make([][]float64, n)
			cur := make([]float64, n)
			start := make([]float64, n)
			for r := range fin {
				fin[r] = make([]float64, steps)
				start[r] = t0
				if r == late {
					start[r] += by
				}
				cur[r] = start[r]
			}
			var chEvs = make([][]tef.Event, n)
			for k := 0; k < steps; k++ {
				for r := 0; r < n; r++ {
					prev, next := (r+n-1)%n, (r+1)%n
					s, ready := cur[r], cur[r]
					if k > 0 {
						ready = math.Max(s, fin[prev][k-1]+lat)
					}
					fin[r][k] = ready + work(r)
					name := "recvReduceSend"
					switch {
					case k == 0:
						name = "send"
					case k >= n-1:
						name = "recvCopySend"
					}
					chEvs[r] = append(chEvs[r], tef.Event{Name: name, Cat: tef.CatStep, Ph: "X", Ts: s, Dur: fin[r][k] - s, Pid: r, Tid: ch,
						Args: map[string]any{tef.ArgPeer: next, tef.ArgStep: k, tef.ArgBytes: 65536, tef.ArgProto: "Simple"}})
					if ready > s {
						chEvs[r] = append(chEvs[r], tef.Event{Name: "wait data", Cat: tef.CatWait, Ph: "X", Ts: s, Dur: ready - s, Pid: r, Tid: ch,
							Args: map[string]any{tef.ArgPeer: prev, tef.ArgOn: "tail", tef.ArgWhat: "prev's data"}})
					}
					cur[r] = fin[r][k]
				}
			}
			for r := 0; r < n; r++ {
				args := map[string]any{tef.ArgSeq: o}
				evs[r] = append(evs[r], tef.Event{Name: "allreduce", Cat: tef.CatOp, Ph: "X", Ts: start[r], Dur: cur[r] - start[r], Pid: r, Tid: ch, Args: args})
				evs[r] = append(evs[r], chEvs[r]...)
				end[r] = math.Max(end[r], cur[r])
			}
		}
		last := 0.0
		for r := 0; r < n; r++ {
			begin := t0
			if r == late {
				begin += by
			}
			evs[r] = append(evs[r], tef.Event{Name: "allreduce", Cat: tef.CatOp, Ph: "X", Ts: begin, Dur: end[r] - begin, Pid: r, Tid: tef.RankTrack,
				Args: map[string]any{tef.ArgSeq: o, tef.ArgBytes: 1 << 20, tef.ArgAlgo: "Ring", tef.ArgProto: "Simple", tef.ArgChannels: 2}})
			last = math.Max(last, end[r])
		}
		t0 = last + 10
	}
	var files []string
	for p := 0; p*perProc < n; p++ {
		f := &tef.File{}
		for r := p * perProc; r < (p+1)*perProc && r < n; r++ {
			f.TraceEvents = append(f.TraceEvents, evs[r]...)
		}
		tef.SortForTracks(f.TraceEvents)
		path := filepath.Join(dir, fmt.Sprintf("trace.json.%d", p))
		if err := tef.WriteFile(path, f); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	return files
}

func TestTraceSummary(t *testing.T) {
	files := ringTrace(t, t.TempDir(), 4, 2, 3, 2)
	code, stdout, stderr := runCLI(append([]string{"trace"}, files...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Each step of rank 2 takes 8 us, 6 steps: every operation 48 us, all
	// of it rank 2's work; the others wait on it.
	for _, want := range []string{
		"trace trace.json.0 + trace.json.1: 4 ranks, 3 operations, 270 spans",
		"straggler: rank 2: the others waited on it 183.000 us\n",
		"critical path of seq 0 (allreduce, 48.000 us, the slowest): 1 link, explains 100% of its time (48.000 us)",
		"│ 1 │    2 │ ch 0  │ work │ send+recvReduceSend+recvCopySend │ 0.000    │ 48.000 │",
		"│    2 │ ch 1  │ 144.000   │ 144.000 │ 0.000   │ 100% │    18 │     0 │",
		"│ 6.500   │    3 │ ch 0  │   0 │ allreduce │ recvReduceSend │ 2       │ tail │ prev's data │ 2.000    │",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Count(stdout, "6.500") != 10 {
		t.Errorf("want the 10 longest waits (--top's default), 6.5 us each:\n%s", stdout)
	}
}

// --json: one object, the files and the summary; --op picks the path's
// operation; a late rank starts the path.
func TestTraceJSON(t *testing.T) {
	files := ringTraceLate(t, t.TempDir(), 4, 4, 2, -1, 1, 7)
	code, stdout, stderr := runCLI(append([]string{"trace", "--json", "--op", "1", "--top", "3"}, files...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Files  []string `json:"files"`
		Ranks  int      `json:"ranks"`
		Ops    []struct{ Seq int64 }
		Tracks []struct{ Rank, Tid int }
		Waits  []struct {
			Dur float64 `json:"dur_us"`
		} `json:"longest_waits"`
		Stragglers []struct {
			Seq  int64
			Last int
			Late float64 `json:"late_us"`
		}
		Path struct {
			Seq   int64
			Frac  float64 `json:"explained_frac"`
			Links []struct {
				Kind string
				Rank int
				Dur  float64 `json:"dur_us"`
			}
		} `json:"critical_path"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(got.Files) != 1 || got.Ranks != 4 || len(got.Ops) != 2 || len(got.Tracks) != 8 || len(got.Waits) != 3 {
		t.Errorf("summary %+v", got)
	}
	for _, s := range got.Stragglers {
		if s.Last != 1 || s.Late != 7 {
			t.Errorf("straggler %+v, want rank 1 late by 7", s)
		}
	}
	if p := got.Path; p.Seq != 1 || p.Frac != 1 || len(p.Links) < 3 || p.Links[0].Kind != "late" || p.Links[0].Rank != 1 || p.Links[0].Dur != 7 {
		t.Errorf("path %+v", p)
	}
}

func TestTracePlot(t *testing.T) {
	dir := t.TempDir()
	files := ringTrace(t, dir, 4, 2, 2, 1)
	out := filepath.Join(dir, "op.png")
	code, stdout, stderr := runCLI(append([]string{"trace", "--plot", out, "--size", "8x5", "--dpi", "100", "--op", "1"}, files...)...)
	if code != exitOK || !strings.Contains(stdout, "wrote "+out+" (800x500 PNG, timeline of seq 1)") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 800 || b.Dy() != 500 {
		t.Errorf("PNG is %v, want 800x500", b)
	}
	ink, b := 0, img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r != 0xffff || g != 0xffff || bl != 0xffff {
				ink++
			}
		}
	}
	if frac := float64(ink) / float64(b.Dx()*b.Dy()); frac < 0.2 {
		t.Errorf("PNG is %.0f%% ink: a timeline of 8 rows fills more", 100*frac)
	}
	// The file exists: refused without --force; SVG with --json says so on
	// stderr, stdout the JSON alone.
	if code, _, stderr := runCLI(append([]string{"trace", "--plot", out}, files...)...); code != exitBad || !strings.Contains(stderr, "writing "+out) {
		t.Errorf("an existing --plot file: exit %d, %q", code, stderr)
	}
	svg := filepath.Join(dir, "op.svg")
	code, stdout, stderr = runCLI(append([]string{"trace", "--json", "--plot", svg}, files...)...)
	if code != exitOK || !strings.Contains(stderr, "wrote "+svg+" (SVG") || !json.Valid([]byte(stdout)) {
		t.Fatalf("svg: exit %d: %s", code, stderr)
	}
	data, err = os.ReadFile(svg)
	if err != nil || !bytes.Contains(data, []byte("<svg")) || len(data) < 10000 {
		t.Errorf("SVG of %d bytes: %v", len(data), err)
	}
}

// A trace that breaks the format's rules: its problems listed, exit 1;
// --no-validate reads it.
func TestTraceValidates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	f := &tef.File{TraceEvents: []tef.Event{
		{Name: "allreduce", Cat: "op", Ph: "X", Ts: 0, Dur: 10, Pid: 0, Tid: 0, Args: map[string]any{"seq": 0}},
		{Name: "send", Cat: "step", Ph: "X", Ts: 5, Dur: 10, Pid: 0, Tid: 0},
	}}
	if err := tef.WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("trace", path)
	if code != exitInvalid || !strings.Contains(stderr, "overlaps event 0") || !strings.Contains(stderr, "--no-validate") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	if code, stdout, stderr := runCLI("trace", "--no-validate", path); code != exitOK || !strings.Contains(stdout, "1 operations") {
		t.Errorf("--no-validate: exit %d, %q %q", code, stdout, stderr)
	}
}

// An NCCL-plugin-like trace: kernels and proxy tracks read, an unknown
// category noted, missing args as unknown.
func TestTraceNCCLLike(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nccl.json")
	raw := `[
{"name":"thread_name","ph":"M","pid":0,"tid":100,"args":{"name":"proxy ch 0"}},
{"name":"AllReduce","cat":"op","ph":"X","ts":2,"dur":50,"pid":0,"tid":1000,"args":{"seq":1,"nccl":"Coll"}},
{"name":"KernelCh","cat":"kernel","ph":"X","ts":5,"dur":40,"pid":0,"tid":0},
{"name":"ProxyOp","cat":"proxy","ph":"X","ts":10,"dur":30,"pid":0,"tid":100,"args":{"peer":1}},
{"name":"ProxyStep","cat":"step","ph":"X","ts":10,"dur":10,"pid":0,"tid":100,"args":{"peer":1,"step":0}},
{"name":"ProxyStep","cat":"step","ph":"X","ts":25,"dur":10,"pid":0,"tid":100,"args":{"peer":1,"step":1}},
{"name":"NetIb","cat":"net","ph":"X","ts":12,"dur":1,"pid":0,"tid":200}
]`
	if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("trace", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		`note: 1 events of category "net" left out`,
		"│   1 │ AllReduce │ unknown │ unknown/unknown │ ?  │     1 │ 50.000  │ none",
		"│    0 │ proxy ch 0 │ 30.000    │ 20.000  │ 0.000   │ 67%  │     2 │     0 │",
		"│    0 │ ch 0       │ 40.000    │ 0.000   │ 0.000   │ -    │     0 │     0 │",
		"no waits traced",
		"│ 1 │    0 │ proxy ch 0 │ work │ ProxyStep │ 0.000    │ 50.000 │", // the path names the track
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestTraceBadInput(t *testing.T) {
	dir := t.TempDir()
	files := ringTrace(t, dir, 2, 1, 1, -1)
	cases := []struct {
		args []string
		want string
	}{
		{nil, "no trace files"},
		{[]string{"--op", "9", files[0], files[1]}, "no operation with seq 9 in the trace (it has seq 0 only)"},
		{[]string{"--op", "-2", files[0]}, "want an operation's seq"},
		{[]string{"--top", "-1", files[0]}, "invalid --top"},
		{[]string{"--plot", "x.gif", files[0]}, `unknown image format ".gif"`},
		{[]string{"--plot", "x.png", "--size", "0x0", files[0]}, "invalid --size"},
		{[]string{files[0], files[0]}, "trace each rank once"},
		{[]string{filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"--bogus", files[0]}, "unknown flag: --bogus"},
	}
	notTrace := filepath.Join(dir, "sweep.jsonl")
	if err := os.WriteFile(notTrace, []byte(`{"schema":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, struct {
		args []string
		want string
	}{[]string{notTrace}, "no traceEvents"})
	for _, c := range cases {
		code, _, stderr := runCLI(append([]string{"trace"}, c.args...)...)
		if code != exitBad || !strings.Contains(stderr, c.want) {
			t.Errorf("tune trace %v: exit %d, %q; want 2 saying %q", c.args, code, stderr, c.want)
		}
	}
}
