package cli

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/results"
)

// Plots render small and fast in tests.
var plotPage = []string{"--size", "5x3.5", "--dpi", "60"} // 300x210 pixels

const (
	plotPass1 = "../../docs/data/tuning/pass1_n2_per1.jsonl.gz"
	plotPass2 = "../../docs/data/tuning/pass2_n2_per1.jsonl.gz"
	ncclText  = "../../results/testdata/h200x2_all_reduce_perf.txt"
	ncclJSON  = "../../results/testdata/nccltests_v3_all_reduce.json"
)

// plotOK runs tune plot and checks that it wrote the image it names.
func plotOK(t *testing.T, out string, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := runCLI(append(append([]string{"plot", "--output", out}, plotPage...), args...)...)
	if code != 0 {
		t.Fatalf("tune plot %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	if !strings.Contains(stdout, "wrote "+out) {
		t.Errorf("stdout %q does not say it wrote %s", stdout, out)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	switch filepath.Ext(out) {
	case ".png":
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if b := img.Bounds(); b.Dx() != 300 || b.Dy() != 210 {
			t.Errorf("%s: %dx%d, want 300x210", out, b.Dx(), b.Dy())
		}
		if !strings.Contains(stdout, "300x210 PNG") {
			t.Errorf("stdout %q does not give the size", stdout)
		}
	case ".svg":
		d := xml.NewDecoder(bytes.NewReader(data))
		for {
			_, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s is not XML: %v", out, err)
			}
		}
	case ".pdf":
		if !bytes.HasPrefix(data, []byte("%PDF-")) {
			t.Errorf("%s is not a PDF", out)
		}
	}
	return stdout, stderr
}

// busBW curves with the models tune fit wrote for them, dashed.
func TestPlotCurvesWithModels(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models.json")
	if code, _, stderr := runCLI("fit", "--output", models, plotPass1); code != 0 {
		t.Fatalf("fit: %s", stderr)
	}
	_, stderr := plotOK(t, filepath.Join(dir, "busbw.png"), "--model", models, "--median", "--where", "proto=Simple", plotPass1)
	if strings.Contains(stderr, "no model") {
		t.Errorf("a curve found no model: %s", stderr)
	}
	// Grouped by protocol, a curve is several configurations: no model,
	// said on stderr.
	_, stderr = plotOK(t, filepath.Join(dir, "byproto.svg"), "--by", "proto", "--model", models, "--kind", "time", plotPass1)
	if !strings.Contains(stderr, "note: LL: no model drawn (its records are of several configurations") {
		t.Errorf("stderr %q", stderr)
	}
	plotOK(t, filepath.Join(dir, "algbw.pdf"), "--kind", "algbw", "--placement", "both", "--by", "algo,placement", plotPass1)
	plotOK(t, filepath.Join(dir, "norm.png"), "--kind", "norm", "--title", "normalised", plotPass1)
}

func TestPlotComparison(t *testing.T) {
	dir := t.TempDir()
	plotOK(t, filepath.Join(dir, "cmp.png"), "--baseline", plotPass1, "--threshold", "10%", plotPass2)
	// Our run against an nccl-tests log tagged with its configuration.
	// Its smallest sizes print a busBW of 0.00; the gate derives busBW
	// from the time column, so they compare like the rest: no note.
	_, stderr := plotOK(t, filepath.Join(dir, "cmp.svg"), "--baseline", ncclText+"@algo=Ring,proto=Simple,channels=1", "--where", "algo=Ring,proto=Simple,nch=1", plotPass2)
	if stderr != "" {
		t.Errorf("stderr %q, want nothing: every size both sides measured has a ratio", stderr)
	}
	// Configurations on one side only are notes.
	_, stderr = plotOK(t, filepath.Join(dir, "part.png"), "--baseline", ncclText, "--where", "proto=LL|auto,ranks=2", plotPass2)
	for _, want := range []string{"note: 2 hosts Ring/LL/1ch: only in the candidate", "note: 1 host auto: only in the baseline"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
}

// --threshold takes tune gate's size bands, parsed by the gate's parser:
// what the gate refuses, the plot refuses with the gate's reason.
func TestPlotComparisonGateThresholds(t *testing.T) {
	dir := t.TempDir()
	plotOK(t, filepath.Join(dir, "bands.png"), "--baseline", plotPass1, "--threshold", "8B-64K=15%,64K-=5%", plotPass2)
	for _, c := range []struct{ thr, want string }{
		{"8B-64K=15%", "no threshold for a size"},
		{"8B-64K", "invalid threshold"},
		{"64K-=5%,1M-=3%", "overlap"},
	} {
		code, _, stderr := runCLI("plot", "--output", filepath.Join(dir, "x.png"), "--baseline", plotPass1, "--threshold", c.thr, plotPass2)
		if code != exitBad || !strings.Contains(stderr, c.want) {
			t.Errorf("plot --threshold %s: exit %d, %q; want %q", c.thr, code, stderr, c.want)
		}
		code, _, stderr = runCLI("gate", "--baseline", plotPass1, "--candidate", plotPass2, "--threshold", c.thr)
		if code != exitBad || !strings.Contains(stderr, c.want) {
			t.Errorf("gate --threshold %s: exit %d, %q; want %q too", c.thr, code, stderr, c.want)
		}
	}
}

func TestPlotWinners(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "table.json")
	err := os.WriteFile(table, []byte(`{"version": 1, "rules": [
		{"coll":"allreduce","ranks":[2,2],"hosts":[2,2],"bytes":[0,4095],"algo":"Ring","proto":"LL","channels":1},
		{"coll":"allreduce","ranks":[2,2],"hosts":[2,2],"bytes":[65536,-1],"algo":"Ring","proto":"Simple","channels":2}]}`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	plotOK(t, filepath.Join(dir, "table.png"), "--kind", "winners", "--table", table, plotPass1)
	plotOK(t, filepath.Join(dir, "built.pdf"), "--kind", "winners", plotPass1)
	plotOK(t, filepath.Join(dir, "none.svg"), "--kind", "winners", "--table", "none", plotPass1)
}

// A results file of every format plots: our JSONL and CSV, nccl-tests
// text (tagged with its configuration) and -J JSON.
func TestPlotEveryInputFormat(t *testing.T) {
	dir := t.TempDir()
	recs, err := results.ReadFile(plotPass1)
	if err != nil {
		t.Fatal(err)
	}
	csv := filepath.Join(dir, "run.csv")
	f, err := os.Create(csv)
	if err != nil {
		t.Fatal(err)
	}
	w := results.NewCSVWriter(f)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	for i, in := range []string{plotPass1, csv, ncclText + "@proto=Simple", ncclJSON} {
		plotOK(t, filepath.Join(dir, string(rune('a'+i))+".png"), in)
	}
}

func TestPlotUsageErrors(t *testing.T) {
	dir := t.TempDir()
	exists := filepath.Join(dir, "exists.png")
	if err := os.WriteFile(exists, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "x.png")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{plotPass1}, "no --output image"},
		{[]string{"--output", out}, "no input files"},
		{[]string{"--output", filepath.Join(dir, "x.gif"), plotPass1}, `unknown image format ".gif"`},
		{[]string{"--output", out, "--kind", "pie", plotPass1}, `invalid --kind "pie"`},
		{[]string{"--output", out, "--by", "colour", plotPass1}, `unknown field "colour"`},
		{[]string{"--output", out, "--where", "proto", plotPass1}, "invalid --where"},
		{[]string{"--output", out, "--where", "proto=LL256", plotPass1}, "no record passes --where proto=LL256"},
		{[]string{"--output", out, "--size", "8by5", plotPass1}, "invalid --size"},
		{[]string{"--output", out, "--dpi", "0", plotPass1}, "invalid --dpi"},
		{[]string{"--output", out, "--threshold", "150%", plotPass1}, "invalid --threshold"},
		{[]string{"--output", out, "--placement", "sideways", plotPass1}, "invalid --placement"},
		{[]string{"--output", out, "--table", "t.json", plotPass1}, "--table goes with --kind winners"},
		{[]string{"--output", out, "--kind", "winners", "--baseline", plotPass1, plotPass2}, "does not go with --kind winners"},
		{[]string{"--output", out, "--kind", "norm", ncclText}, "ref_copy_gbps"},
		{[]string{"--output", out, "--model", filepath.Join(dir, "none.json"), plotPass1}, "none.json"},
		{[]string{"--output", exists, plotPass1}, "already exists"},
	} {
		code, _, stderr := runCLI(append([]string{"plot"}, c.args...)...)
		if code != exitBad || !strings.Contains(stderr, c.want) {
			t.Errorf("tune plot %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a failed plot left %s behind", out)
	}
	if b, _ := os.ReadFile(exists); string(b) != "x" {
		t.Error("an existing file was overwritten without --force")
	}
	plotOK(t, exists, "--force", plotPass1)
}
