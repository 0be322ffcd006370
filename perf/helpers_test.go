package perf

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/tuning"
)

// tiny is the sweep most tests use: 8 B to 32 KiB by 8 (five sizes), two
// timed iterations after one warmup.
var tiny = []string{"-b", "8", "-e", "64K", "-f", "8", "-n", "2", "-w", "1"}

// result is one run() invocation.
type result struct {
	code           int
	stdout, stderr string
}

// runWith runs test t on backend be with args and returns its exit code and
// output.
func runWith(tb testing.TB, t *Test, be Backend, args ...string) result {
	tb.Helper()
	var out, errb bytes.Buffer
	code := run(t, be, args, &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// runPerf runs test t on the embedded backend.
func runPerf(tb testing.TB, t *Test, args ...string) result {
	tb.Helper()
	return runWith(tb, t, Embedded{}, args...)
}

// args concatenates argument lists.
func args(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// dataRows returns the data rows of an nccl-tests table: the lines that are
// neither comments nor blank.
func dataRows(stdout string) []string {
	var rows []string
	for _, line := range strings.Split(stdout, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rows = append(rows, line)
	}
	return rows
}

// lines splits output into lines without the final empty one.
func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// hasLine reports whether out has a line equal to want.
func hasLine(out, want string) bool {
	for _, l := range lines(out) {
		if l == want {
			return true
		}
	}
	return false
}

// headerLines is resultHeader as lines.
func headerLines(cputime, timestamps, perIter, bitwise bool) []string {
	return lines(resultHeader(cputime, timestamps, perIter, bitwise))
}

// containsSeq reports whether seq occurs as consecutive lines of out.
func containsSeq(out []string, seq []string) bool {
	for i := 0; i+len(seq) <= len(out); i++ {
		ok := true
		for j := range seq {
			if out[i+j] != seq[j] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// readFixture reads a file of testdata/.
func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unsetenv unsets key for the duration of the test (restored afterwards).
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "") // registers the restore
	os.Unsetenv(key)
}

// cleanBwEnv makes sure no bandwidth floor from the caller's environment
// changes exit codes.
func cleanBwEnv(t *testing.T) {
	t.Helper()
	unsetenv(t, "GCCL_MIN_BW")
	unsetenv(t, "NCCL_TESTS_MIN_BW")
}

// protoReq and algoReq read a protocol or an algorithm name ("" and
// "auto": auto) for a test's RunConfig; a bad name is a typo in the test,
// and panics.
func protoReq(s string) tuning.ProtoReq {
	r, err := tuning.ParseProtoReq(s)
	if err != nil {
		panic(err)
	}
	return r
}

func algoReq(s string) tuning.AlgoReq {
	r, err := tuning.ParseAlgoReq(s)
	if err != nil {
		panic(err)
	}
	return r
}
