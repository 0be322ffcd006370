package ci

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// mixedReport has every verdict and keys on both sides only: a regression
// at 1M, a large noisy change at 8K, an improvement at 64K, 256 unchanged,
// 16 only in the baseline, 32 only in the candidate, and a 2 MiB key
// judged on the plain ratio.
func mixedReport(t *testing.T, requireAll bool) *Report {
	var base, cand []results.Record
	add := func(size int64, b, c []float64) {
		base = append(base, runs(size, 5, b...)...)
		cand = append(cand, runs(size, 5, c...)...)
	}
	add(256, jitter(1, 8, 2, 0.01), jitter(2, 8, 2, 0.01))
	add(8<<10, []float64{10, 6, 15, 9, 11}, []float64{14, 7, 16, 12.5, 9.5})
	add(64<<10, jitter(3, 8, 40, 0.01), jitter(4, 8, 30, 0.01))
	add(1<<20, jitter(5, 8, 400, 0.01), jitter(6, 8, 500, 0.01))
	add(2<<20, []float64{800}, []float64{1000})
	base = append(base, runs(16, 5, 1, 1, 1)...)
	cand = append(cand, runs(32, 5, 1, 1, 1)...)
	opt := DefaultOptions()
	opt.Thresholds, _ = ParseThresholds("-64K=15%,64K-=5%")
	opt.Normalize = NormCopy
	opt.RequireAll = requireAll
	return mustCompare(t, base, cand, opt)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test -update rewrites it); got:\n%s", path, got)
	}
}

func TestVerdictsOfTheMixedReport(t *testing.T) {
	rep := mixedReport(t, false)
	want := map[int64]Verdict{256: Unchanged, 8 << 10: Noisy, 64 << 10: Improvement, 1 << 20: Regression, 2 << 20: Regression}
	for _, c := range rep.Comparisons {
		if c.Verdict != want[c.Key.Size] {
			t.Errorf("%s: %s, want %s", c.Key, c.Verdict, want[c.Key.Size])
		}
	}
	var order []Verdict
	for _, c := range rep.Comparisons {
		order = append(order, c.Verdict)
	}
	if len(order) != 5 || order[0] != Regression || order[1] != Regression || order[2] != Noisy || order[3] != Improvement || order[4] != Unchanged {
		t.Errorf("report order %v: want regressions, noisy, improvements, unchanged", order)
	}
}

func TestTextOutput(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, mixedReport(t, false), false); err != nil {
		t.Fatal(err)
	}
	golden(t, "mixed.txt", b.Bytes())
	b.Reset()
	WriteText(&b, mixedReport(t, false), true)
	if !strings.Contains(b.String(), "│ unchanged   │ allreduce float sum auto/auto/auto 2 ranks │ 256 out-of-place") {
		t.Errorf("all: the unchanged key is not listed:\n%s", b.String())
	}
}

func TestMarkdownOutput(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, mixedReport(t, false)); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"### ❌ Performance gate: FAIL: 2 regressions",
		"threshold 0-64K=15%,64K-=5%, normalized by copy",
		"5 keys compared, 2 regressions, 1 beyond the threshold but not significant, 1 improvement, 1 unchanged, 1 only in the baseline, 1 only in the candidate",
		"| 🔴 | allreduce float sum auto/auto/auto 2 ranks | 1M out-of-place | ",
		"| 🟡 | allreduce float sum auto/auto/auto 2 ranks | 8K out-of-place | ",
		"| 🟢 | allreduce float sum auto/auto/auto 2 ranks | 64K out-of-place | ",
		"<details><summary>1 unchanged</summary>",
		"<details><summary>1 only in the baseline</summary>",
		"- `allreduce float sum auto/auto/auto 2 ranks 16 out-of-place`",
		"no repeats: plain ratio against the threshold",
		"beyond the threshold but not significant",
		"> normalised by each run's copy() bandwidth",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	// Regression rows come before the noisy one, which comes before the improvement.
	if i, j, k := strings.Index(md, "🔴 |"), strings.Index(md, "🟡 |"), strings.Index(md, "🟢 |"); !(i < j && j < k) {
		t.Errorf("row order: regression at %d, noisy at %d, improvement at %d", i, j, k)
	}
	golden(t, "mixed.md", b.Bytes())

	var pass bytes.Buffer
	WriteMarkdown(&pass, mustCompare(t, runs(8, 1, 1, 1, 1, 1), runs(8, 1, 1, 1, 1, 1), DefaultOptions()))
	if !strings.HasPrefix(pass.String(), "### ✅ Performance gate: PASS") {
		t.Errorf("a passing report starts %q", strings.SplitN(pass.String(), "\n", 2)[0])
	}
}

func TestJUnitOutput(t *testing.T) {
	for _, requireAll := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteJUnit(&b, mixedReport(t, requireAll)); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Skipped  int `xml:"skipped,attr"`
			Suites   []struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
				Cases    []struct {
					Classname string `xml:"classname,attr"`
					Name      string `xml:"name,attr"`
					Failure   *struct {
						Message string `xml:"message,attr"`
						Type    string `xml:"type,attr"`
						Text    string `xml:",chardata"`
					} `xml:"failure"`
					Skipped *struct {
						Message string `xml:"message,attr"`
					} `xml:"skipped"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatalf("JUnit does not parse: %v\n%s", err, b.String())
		}
		wantFail, wantSkip := 2, 2
		if requireAll {
			wantFail, wantSkip = 4, 0
		}
		if doc.Tests != 7 || doc.Failures != wantFail || doc.Skipped != wantSkip || len(doc.Suites) != 1 ||
			doc.Suites[0].Tests != 7 || doc.Suites[0].Failures != wantFail || len(doc.Suites[0].Cases) != 7 {
			t.Fatalf("require-all %v: tests %d failures %d skipped %d; want 7, %d, %d:\n%s", requireAll, doc.Tests, doc.Failures, doc.Skipped, wantFail, wantSkip, b.String())
		}
		failed := map[string]string{}
		for _, c := range doc.Suites[0].Cases {
			if c.Classname != "allreduce float sum auto/auto/auto 2 ranks" {
				t.Errorf("classname %q", c.Classname)
			}
			if c.Failure != nil {
				failed[c.Name] = c.Failure.Type + ": " + c.Failure.Message
			}
		}
		want := map[string]string{
			"1M out-of-place": "regression: busbw -20.0% beyond the limit -5.0%",
			"2M out-of-place": "regression: busbw -20.0% beyond the limit -5.0%",
		}
		if requireAll {
			want["16 out-of-place"] = "missing: only in the baseline"
			want["32 out-of-place"] = "missing: only in the candidate"
		}
		if len(failed) != len(want) {
			t.Errorf("failures %v, want %v", failed, want)
		}
		for k, v := range want {
			if failed[k] != v {
				t.Errorf("%s: failure %q, want %q", k, failed[k], v)
			}
		}
	}
}

func TestJSONOutput(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, mixedReport(t, false)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Pass        bool           `json:"pass"`
		ExitCode    int            `json:"exit_code"`
		Counts      map[string]int `json:"counts"`
		Comparisons []struct {
			Name    string   `json:"name"`
			Verdict string   `json:"verdict"`
			P       *float64 `json:"p"`
			Change  *float64 `json:"change"`
			Key     Key      `json:"key"`
		} `json:"comparisons"`
		OnlyBaseline []Key `json:"only_baseline"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	if doc.Pass || doc.ExitCode != ExitRegression || doc.Counts["regression"] != 2 || doc.Counts["noisy"] != 1 || len(doc.Comparisons) != 5 || len(doc.OnlyBaseline) != 1 {
		t.Errorf("%+v", doc)
	}
	for _, c := range doc.Comparisons {
		if (c.P == nil) != (c.Key.Size == 2<<20) || c.Change == nil {
			t.Errorf("%s: p %v, change %v (null only where no test ran)", c.Name, c.P, c.Change)
		}
	}
}
