package perf

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/results"
)

// cleanChoiceEnv unsets every variable that chooses a configuration, so
// the caller's shell cannot change a test.
func cleanChoiceEnv(t *testing.T) {
	t.Helper()
	for _, k := range envRead {
		unsetenv(t, k)
	}
}

// runRecords runs allreduce with args plus --out and returns the result and
// its records.
func runRecords(t *testing.T, extra ...string) (result, []results.Record) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run.jsonl")
	res := runPerf(t, AllReduce, args([]string{"-g", "2", "-b", "1K", "-e", "4K", "-f", "4", "-n", "2", "-w", "1", "--out", out}, extra)...)
	if res.code != exitOK {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	recs, err := results.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return res, recs
}

// A sweep axis given by a flag runs exactly as the flag says, whatever the
// environment says; the header says which variable it overrode, and the
// records do not carry the overridden variable.
func TestFlagBeatsEnvironment(t *testing.T) {
	cleanChoiceEnv(t)
	t.Setenv("GCCL_PROTO", "LL")
	t.Setenv("GCCL_NCHANNELS", "3")
	res, recs := runRecords(t, "--proto", "Simple", "--nchannels", "1")
	if !strings.Contains(res.stdout, "# Note: GCCL_PROTO=LL in the environment is overridden by --proto") ||
		!strings.Contains(res.stdout, "# Note: GCCL_NCHANNELS=3 in the environment is overridden by --nchannels") {
		t.Errorf("no note of the overridden variables:\n%s", res.stdout)
	}
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	for _, r := range recs {
		if r.Protocol != "Simple" || r.ChosenProto != "Simple" || r.Channels != 1 || r.ChosenCh != 1 {
			t.Errorf("%d B %s: labelled %s/%d, ran %s/%d; want Simple/1 as the flags say", r.Size, r.Placement, r.Protocol, r.Channels, r.ChosenProto, r.ChosenCh)
		}
		if _, ok := r.Env["GCCL_PROTO"]; ok {
			t.Errorf("record carries GCCL_PROTO, which a flag overrode: %v", r.Env)
		}
	}
}

// "auto" in --configs is the stack's own choice, not what a variable forces.
func TestConfigsAutoIgnoresChoiceEnvironment(t *testing.T) {
	cleanChoiceEnv(t)
	t.Setenv("GCCL_PROTO", "LL")
	t.Setenv("GCCL_NCHANNELS", "3")
	t.Setenv("GCCL_MAX_NCHANNELS", "3")
	_, recs := runRecords(t, "--configs", "auto")
	for _, r := range recs {
		if r.Protocol != "auto" || r.Channels != 0 || strings.Contains(r.ChosenBy, "forced") {
			t.Errorf("%d B: labelled %s/%d chosen by %q; want auto/0 chosen by the stack", r.Size, r.Protocol, r.Channels, r.ChosenBy)
		}
		if r.ChosenCh == 3 && ccl.DefaultMaxNChannels() < 3 {
			t.Errorf("%d B ran on 3 channels, which GCCL_NCHANNELS asked for", r.Size)
		}
	}
}

// Without a flag for it, a variable applies to every configuration, and the
// records are labelled by what it forced and carry it.
func TestEnvironmentAppliesWithoutFlag(t *testing.T) {
	cleanChoiceEnv(t)
	t.Setenv("GCCL_PROTO", "ll") // the stack reads names case-insensitively
	res, recs := runRecords(t)
	if !strings.Contains(res.stdout, "# Note: GCCL_PROTO=ll from the environment applies to every configuration") {
		t.Errorf("no note of the variable in force:\n%s", res.stdout)
	}
	for _, r := range recs {
		if r.Protocol != "LL" || r.ChosenProto != "LL" || r.Env["GCCL_PROTO"] != "ll" {
			t.Errorf("%d B: labelled %s, ran %s, env %v; want LL, LL and GCCL_PROTO recorded", r.Size, r.Protocol, r.ChosenProto, r.Env)
		}
	}
}

// An invalid variable is refused before anything runs, naming it.
func TestInvalidChoiceEnvironment(t *testing.T) {
	cleanChoiceEnv(t)
	t.Setenv("GCCL_ALGO", "Butterfly")
	res := runPerf(t, AllReduce, tiny...)
	if res.code != exitInvalidUsage || !strings.Contains(res.stderr, `GCCL_ALGO="Butterfly"`) || !strings.Contains(res.stderr, "Ring, Tree") {
		t.Errorf("exit %d, stderr %q; want exit %d naming GCCL_ALGO and the valid values", res.code, res.stderr, exitInvalidUsage)
	}
	if strings.Contains(res.stdout, "size") {
		t.Errorf("a table was printed before the error:\n%s", res.stdout)
	}
}
