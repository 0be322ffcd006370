package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The page names no URL: no http(s) anywhere (not even SVG namespaces),
// no src attribute, links only to its own anchors or data:, no CSS url()
// or @import; and its policy forbids loading anything.
func TestNoNetworkReferences(t *testing.T) {
	page := render(t, synthPage(20, 30))
	low := strings.ToLower(page)
	for _, bad := range []string{"http://", "https://", "src=", "url(", "@import", "//cdn", "xlink"} {
		if i := strings.Index(low, bad); i >= 0 {
			t.Errorf("the page contains %q: %q", bad, page[max(0, i-60):min(len(page), i+60)])
		}
	}
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], "#") && !strings.HasPrefix(m[1], "data:") {
			t.Errorf("href %q: want an anchor of the page or data:", m[1])
		}
	}
	if !strings.Contains(page, `content="default-src 'none';`) {
		t.Error("no Content-Security-Policy with default-src 'none'")
	}
}

// The CSP allows the page's one script by its hash: the hash of the
// script as the page holds it.
func TestScriptAllowedByHash(t *testing.T) {
	page := render(t, synthPage(3, 5))
	if n := strings.Count(page, "<script"); n != 1 {
		t.Fatalf("%d scripts, want 1", n)
	}
	_, rest, _ := strings.Cut(page, "<script>")
	script, _, _ := strings.Cut(rest, "</script>")
	h := sha256.Sum256([]byte(script))
	want := "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
	csp := regexp.MustCompile(`http-equiv="Content-Security-Policy" content="([^"]*)"`).FindStringSubmatch(page)
	if csp == nil || !strings.Contains(html.UnescapeString(csp[1]), "script-src "+want) {
		t.Errorf("the policy %q does not allow the script's hash %s", csp, want)
	}
}

const evil = `<script>alert("x")</script><img src=x onerror=alert(1)>&`

// Every text the caller gives is escaped, in the HTML and in the SVGs:
// the page's only <script> is its own and no injected tag appears.
func TestEveryTextEscaped(t *testing.T) {
	p := synthPage(4, 10)
	p.Title = "title " + evil
	p.Meta = append(p.Meta, Meta{"name " + evil, "value " + evil})
	p.Curves[0].Title = "curve " + evil
	p.Curves[0].YLabel = "ylabel " + evil
	p.Curves[0].Series[0].Name = "series " + evil
	p.Series[0].Key = "key " + evil // has a change point: drawn, and in the change table
	p.Series[0].Unit = "unit " + evil
	p.Series[0].Points[5].Commit = "commit " + evil
	p.Series[0].Points[6].Commit = "commit " + evil
	p.Series[0].Changes = []ChangePoint{{Index: 6, Before: 10, After: 9, PValue: 0.001}}
	p.Gate = &GateTable{Baseline: "base " + evil, Candidate: "cand " + evil, Unit: "gu " + evil,
		Rows: []GateRow{{Key: "gate " + evil, Baseline: 1, Candidate: 2, Change: 1, PValue: math.NaN(), Verdict: "verdict " + evil}}}
	page := render(t, p)
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("%d <script tags, want the page's own only", n)
	}
	for _, bad := range []string{"<img", `alert("x")`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	// Each text is there, escaped (html/template writes &lt;, gonum's SVG
	// canvas &lt; too): the SVG's axis labels included.
	for _, w := range []string{"title", "name", "value", "curve", "series", "key", "commit", "base", "cand", "gu", "gate", "verdict"} {
		if !strings.Contains(page, w+" &lt;script&gt;") {
			t.Errorf("%q not found escaped in the page", w)
		}
	}
	for _, svgText := range []string{"ylabel &lt;script&gt;", "unit &lt;script&gt;"} {
		if !strings.Contains(page, svgText) {
			t.Errorf("the SVG text %q not found escaped", svgText)
		}
	}
}

// The page holds one curve chart per curve, one full chart per key drawn
// (Charts of them, keys with change points first) and one sparkline per
// key.
func TestSVGCountMatchesKeysDrawn(t *testing.T) {
	for _, tc := range []struct {
		keys, runs, charts int
		full               int
	}{
		{200, 100, 0, DefaultCharts},
		{200, 100, 5, 5},
		{200, 100, -1, 0},
		{12, 20, 100, 12}, // every key moved a little: all drawn
	} {
		p := synthPage(tc.keys, tc.runs)
		p.Charts = tc.charts
		got := svgClasses(render(t, p))
		want := map[string]int{"curve": 2, "series": tc.full, "spark": tc.keys}
		if tc.full == 0 {
			delete(want, "series")
		}
		if len(got) != len(want) || got["curve"] != want["curve"] || got["series"] != want["series"] || got["spark"] != want["spark"] {
			t.Errorf("%d keys, Charts %d: svgs %v, want %v", tc.keys, tc.charts, got, want)
		}
	}
}

// drawn takes the keys with change points first, the largest change
// first, then the keys that moved, the most first; a flat key is not
// drawn; n caps them.
func TestDrawnOrder(t *testing.T) {
	flat := []RunPoint{{Value: 5}, {Value: 5}, {Value: 5}}
	moved := func(last float64) []RunPoint { return []RunPoint{{Value: 10}, {Value: 10}, {Value: last}} }
	series := []KeySeries{
		{Key: "flat", Points: flat},
		{Key: "moved 20%", Points: moved(12)},
		{Key: "change 5%", Points: moved(10), Changes: []ChangePoint{{Index: 2, Before: 10, After: 10.5}}},
		{Key: "moved 30%", Points: moved(7)},
		{Key: "change 10%", Points: moved(10), Changes: []ChangePoint{{Index: 1, Before: 10, After: 9}}},
	}
	name := func(idx []int) string {
		var s []string
		for _, i := range idx {
			s = append(s, series[i].Key)
		}
		return strings.Join(s, ", ")
	}
	if got, want := name(drawn(series, 10)), "change 10%, change 5%, moved 30%, moved 20%"; got != want {
		t.Errorf("drawn: %s; want %s", got, want)
	}
	if got, want := name(drawn(series, 3)), "change 10%, change 5%, moved 30%"; got != want {
		t.Errorf("drawn, 3: %s; want %s", got, want)
	}
	if got := drawn(series, 0); len(got) != 0 {
		t.Errorf("drawn, 0: %v", got)
	}
}

// A change point is drawn where it lies: on the sparkline (no axes, no
// padding: run i of n spans [i-1, i]/n of the width) as a red line for a
// regression at Index/n of the width, and on the full chart as a dashed
// red line labelled with its change; an improvement is green; a key
// without change points has neither colour.
func TestChangePointsInSVG(t *testing.T) {
	pts := make([]RunPoint, 40)
	for i := range pts {
		pts[i] = RunPoint{Value: 10 + float64(i%3)*0.1}
	}
	for _, tc := range []struct {
		name   string
		s      KeySeries
		colour string
		label  string
	}{
		{"regression", KeySeries{Key: "k", Points: pts, Changes: []ChangePoint{{Index: 30, Before: 10.1, After: 9.09, PValue: 0.001}}}, "#C01C28", "-10.0%"},
		{"improvement", KeySeries{Key: "k", Points: pts, Changes: []ChangePoint{{Index: 10, Before: 10, After: 10.5, PValue: 0.001}}}, "#1A7F37", "+5.0%"},
		{"time regression", KeySeries{Key: "k", Points: pts, LowerIsBetter: true, Changes: []ChangePoint{{Index: 10, Before: 10, After: 10.5, PValue: 0.001}}}, "#C01C28", "+5.0%"},
	} {
		spark, err := sparkSVG(tc.s)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`<path d="M([0-9.]+),[0-9.]+L([0-9.]+),[0-9.]+" style="fill:none;stroke:` + tc.colour).FindStringSubmatch(string(spark))
		if m == nil {
			t.Errorf("%s: no %s line on the sparkline:\n%.600s", tc.name, tc.colour, spark)
		} else {
			x0, _ := strconv.ParseFloat(m[1], 64)
			x1, _ := strconv.ParseFloat(m[2], 64)
			want := float64(tc.s.Changes[0].Index) / float64(len(pts)) * sparkW.Points()
			if math.Abs(x0-want) > 0.05 || x0 != x1 {
				t.Errorf("%s: sparkline change line from x=%v to %v, want a vertical line at %.3f", tc.name, x0, x1, want)
			}
		}
		full, err := seriesSVG(tc.s)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`stroke:` + tc.colour + `;stroke-width:1.2;stroke-dasharray:4,2`).MatchString(string(full)) {
			t.Errorf("%s: no dashed %s change line on the full chart", tc.name, tc.colour)
		}
		if !strings.Contains(string(full), ">"+tc.label+"</text>") {
			t.Errorf("%s: the full chart does not label the change %s", tc.name, tc.label)
		}
	}
	plain := KeySeries{Key: "k", Points: pts}
	for _, f := range []func(KeySeries) (string, error){
		func(s KeySeries) (string, error) { h, err := sparkSVG(s); return string(h), err },
		func(s KeySeries) (string, error) { h, err := seriesSVG(s); return string(h), err },
	} {
		svg, err := f(plain)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(svg, "#C01C28") || strings.Contains(svg, "#1A7F37") {
			t.Error("a series without change points has a change line")
		}
	}
}

// The page's change table lists every change point with its runs,
// commits, medians, change and p-value; regressions first.
func TestChangeTable(t *testing.T) {
	p := Page{Series: []KeySeries{
		{Key: "up", Unit: "GB/s", Points: []RunPoint{{Commit: "aaaaaaaaaaaa1", Value: 10}, {Commit: "bbbbbbbbbbbb2", Value: 11}}, Changes: []ChangePoint{{Index: 1, Before: 10, After: 11, PValue: 0.0004}}},
		{Key: "down", Unit: "GB/s", Points: []RunPoint{{Commit: "c1", Value: 10}, {Commit: "c2", Value: 10}, {Commit: "c3", Value: 9}}, Changes: []ChangePoint{{Index: 2, Before: 10, After: 9, PValue: math.NaN()}}},
	}}
	page := render(t, p)
	if want := "2 keys over up to 3 runs; 2 change points: 1 regression, 1 improvement."; !strings.Contains(page, want) {
		t.Errorf("the summary does not say %q", want)
	}
	_, table, _ := strings.Cut(page, `id="change-table"`)
	table, _, _ = strings.Cut(table, "</table>")
	rows := strings.Split(table, "<tr>")[2:]
	if len(rows) != 2 {
		t.Fatalf("%d change rows, want 2:\n%s", len(rows), table)
	}
	for i, want := range [][]string{
		{">down</a>", "2 → 3", "c2 → c3", ">10<", ">9<", "-10.0%", "–", `class="n worse"`},
		{">up</a>", "1 → 2", "aaaaaaaaaa → bbbbbbbbbb", ">10<", ">11<", "+10.0%", "0.0004", `class="n better"`},
	} {
		for _, w := range want {
			if !strings.Contains(html.UnescapeString(rows[i]), w) {
				t.Errorf("change row %d lacks %q:\n%s", i+1, w, rows[i])
			}
		}
	}
}

// Metadata never shows a credential: an entry whose name looks like one,
// or whose value holds NAME=value with such a name, is left out, and the
// page says how many were.
func TestMetaWithholdsSecrets(t *testing.T) {
	p := synthPage(2, 3)
	p.Meta = []Meta{
		{"machine", "Xeon, 2 cores"},
		{"GCCL_JOB_TOKEN", "tok-0123"},
		{"api_key", "key-4567"},
		{"env", "NCCL_PROTO=LL AWS_SECRET_ACCESS_KEY=sec-89ab"},
		{"env", "NCCL_ALGO=Ring;GITHUB_TOKEN=ghp-cdef"},
		{"Password", "pw-1111"},
		{"recorded env", "NCCL_PROTO=Simple GCCL_ALGO=Ring"},
	}
	page := render(t, p)
	for _, secret := range []string{"tok-0123", "key-4567", "sec-89ab", "ghp-cdef", "pw-1111", "JOB_TOKEN", "SECRET_ACCESS"} {
		if strings.Contains(page, secret) {
			t.Errorf("the page shows %q", secret)
		}
	}
	for _, keep := range []string{"Xeon, 2 cores", "NCCL_PROTO=Simple GCCL_ALGO=Ring", "5 metadata entries left out"} {
		if !strings.Contains(page, keep) {
			t.Errorf("the page lacks %q", keep)
		}
	}
}

// A page that cannot be drawn is an error naming what is wrong, wrapping
// ErrBadPage, and nothing is written.
func TestBadPages(t *testing.T) {
	good := func() Page { return synthPage(2, 4) }
	for _, tc := range []struct {
		name, want string
		edit       func(*Page)
	}{
		{"empty", "nothing to report", func(p *Page) { *p = Page{Title: "x"} }},
		{"curve without series", "no series", func(p *Page) { p.Curves[0].Series = nil }},
		{"series without points", "has no points", func(p *Page) { p.Curves[0].Series[1].Points = nil }},
		{"size 0", "size 0: want a positive number of bytes", func(p *Page) { p.Curves[0].Series[0].Points[0].Bytes = 0 }},
		{"NaN on a curve", "want a finite number", func(p *Page) { p.Curves[1].Series[0].Points[2].Value = math.NaN() }},
		{"key twice", "appears twice", func(p *Page) { p.Series[1].Key = p.Series[0].Key }},
		{"no key", "no key", func(p *Page) { p.Series[1].Key = " " }},
		{"no runs", "no points", func(p *Page) { p.Series[1].Points = nil }},
		{"Inf run", "point 2: value +Inf", func(p *Page) { p.Series[0].Points[2].Value = math.Inf(1) }},
		{"change at 0", "index 0: want increasing indices between 1 and 3", func(p *Page) { p.Series[0].Changes = []ChangePoint{{Index: 0, Before: 1, After: 2}} }},
		{"change past the end", "index 4", func(p *Page) { p.Series[0].Changes = []ChangePoint{{Index: 4, Before: 1, After: 2}} }},
		{"changes out of order", "index 1: want increasing", func(p *Page) {
			p.Series[0].Changes = []ChangePoint{{Index: 2, Before: 1, After: 2}, {Index: 1, Before: 1, After: 2}}
		}},
		{"NaN median", "medians NaN", func(p *Page) { p.Series[0].Changes = []ChangePoint{{Index: 2, Before: math.NaN(), After: 2}} }},
		{"p-value 2", "p-value 2: want 0 to 1", func(p *Page) { p.Series[0].Changes = []ChangePoint{{Index: 2, Before: 1, After: 2, PValue: 2}} }},
		{"gate row without key", "gate row 1 has no key", func(p *Page) { p.Gate = &GateTable{Rows: []GateRow{{}}} }},
	} {
		p := good()
		tc.edit(&p)
		var b bytes.Buffer
		err := Write(&b, p)
		if err == nil || !errors.Is(err, ErrBadPage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one wrapping ErrBadPage saying %q", tc.name, err, tc.want)
		}
		if b.Len() != 0 {
			t.Errorf("%s: %d bytes written despite the error", tc.name, b.Len())
		}
	}
	// A gate alone, a series of one run, a curve alone: each is a page.
	for _, p := range []Page{
		{Gate: &GateTable{Pass: true}},
		{Series: []KeySeries{{Key: "k", Points: []RunPoint{{Value: 0}}}}},
		{Curves: []Curve{{Series: []CurveSeries{{Name: "a", Points: []SizePoint{{Bytes: 8, Value: 0}}}}}}},
	} {
		render(t, p)
	}
}

// BenchmarkWrite is the target: a report of 200 keys x 100 runs
// (under 5 s wanted).
func BenchmarkWrite(b *testing.B) {
	p := synthPage(200, 100)
	var n int
	for b.Loop() {
		var buf bytes.Buffer
		if err := Write(&buf, p); err != nil {
			b.Fatal(err)
		}
		n = buf.Len()
	}
	b.ReportMetric(float64(n)/1e6, "MB/page")
}

// A value axis has 2 to 6 labels inside its range, all different, evenly
// spaced, whatever its scale.
func TestValueTicks(t *testing.T) {
	for _, r := range [][2]float64{{0, 10}, {6.05, 6.21}, {1.89, 2.01}, {0.09075, 0.09375}, {-3, 3}, {0, 1e6}, {9.9999, 10.0001}, {0, 0.0123}} {
		var labels []float64
		seen := map[string]bool{}
		for _, tk := range linearTicks(r[0], r[1]) {
			if tk.Value < r[0]-1e-12 || tk.Value > r[1]+1e-12 {
				t.Errorf("%v: tick %v outside", r, tk.Value)
			}
			if tk.Label == "" {
				continue
			}
			if seen[tk.Label] || tk.Label == "-0" {
				t.Errorf("%v: label %q twice, or a negative zero", r, tk.Label)
			}
			seen[tk.Label] = true
			labels = append(labels, tk.Value)
		}
		if len(labels) < 2 || len(labels) > 6 {
			t.Errorf("%v: %d labels %v, want 2 to 6", r, len(labels), labels)
		}
		for i := 2; i < len(labels); i++ {
			if d1, d2 := labels[i]-labels[i-1], labels[1]-labels[0]; math.Abs(d1-d2) > 1e-9*math.Abs(d2) {
				t.Errorf("%v: uneven labels %v", r, labels)
			}
		}
	}
}
