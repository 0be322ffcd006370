package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gateGoBench is go test -bench -count 3 output of lib/ccl: two AllReduce
// benchmarks and CallOneRank, three lines each.
const gateGoBench = "../../results/testdata/gobench_ccl.txt"

// slowBench writes the Go benchmark output with the ns/op of the
// benchmarks whose name contains match multiplied by f.
func slowBench(t *testing.T, match string, f float64) string {
	t.Helper()
	data, err := os.ReadFile(gateGoBench)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		fs := strings.Fields(l)
		if len(fs) < 4 || !strings.Contains(fs[0], match) || fs[3] != "ns/op" {
			continue
		}
		ns, _ := strconv.ParseFloat(fs[2], 64)
		fs[2] = fmt.Sprintf("%.1f", ns*f)
		lines[i] = strings.Join(fs, " ")
	}
	path := filepath.Join(t.TempDir(), "slow.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Go benchmark output gates like benchstat compares it: by name, the
// -count repeats as runs.
func TestGateGoBenchOutput(t *testing.T) {
	code, stdout, stderr := runCLI("gate", "--baseline", gateGoBench, "--candidate", gateGoBench, "--metric", "time")
	if code != 0 || !strings.Contains(stdout, "3 keys compared") {
		t.Errorf("identical: exit %d\n%s%s", code, stdout, stderr)
	}
	slow := slowBench(t, "CallOneRank", 1.5)
	code, stdout, stderr = runCLI("gate", "--baseline", gateGoBench, "--candidate", slow, "--metric", "time", "--threshold", "20%")
	if code != 1 {
		t.Fatalf("CallOneRank 1.5x slower: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"FAIL: 1 regression", "github.com/gccl/gccl/lib/ccl.CallOneRank-2", "+50.0%", "3 vs 3 runs"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// Bandwidth: the AllReduce benchmarks report it, CallOneRank does not.
	code, stdout, stderr = runCLI("gate", "--baseline", gateGoBench, "--candidate", slow)
	if code != 0 || !strings.Contains(stdout, "2 keys compared") || !strings.Contains(stdout, "records without a busbw skipped: 3 baseline, 3 candidate") {
		t.Errorf("busbw: exit %d\n%s%s", code, stdout, stderr)
	}
	// A benchmark has no size: size bands alone cannot gate it.
	code, _, stderr = runCLI("gate", "--baseline", gateGoBench, "--candidate", gateGoBench, "--threshold", "8B-64K=5%")
	if code != 2 || !strings.Contains(stderr, "is a Go benchmark, which has no size") || !strings.Contains(stderr, "(,5%)") {
		t.Errorf("size bands: exit %d, %s", code, stderr)
	}
}
