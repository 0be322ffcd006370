package cli

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gccl/gccl/perf"
)

var subcommands = []string{"sweep", "fit", "constants", "choices", "table", "validate", "plot", "gate", "baseline", "report", "plugin",
	"history add", "history list", "history export", "history import", "trace"}

// flagLine is one line of pflag's PrintDefaults: "  -b, --minbytes string   usage".
var flagLine = regexp.MustCompile(`^  (?:-(\w), )?\s*--([\w-]+)(?: (\w+))?\s{2,}(\S.*)$`)

// valueNames are the value names pflag derives from a flag's type; any
// other means a backquoted word in the usage was taken for the name.
var valueNames = map[string]bool{"": true, "string": true, "int": true, "float": true, "duration": true, "stringArray": true, "strings": true}

type helpFlag struct{ short, long, value, usage string }

// helpFlags runs `tune cmd --help` and returns its flag lines, failing on
// any line of the flags block that is not one.
func helpFlags(t *testing.T, cmd string) []helpFlag {
	t.Helper()
	code, stdout, stderr := runCLI(append(strings.Fields(cmd), "--help")...)
	if code != exitOK {
		t.Fatalf("tune %s --help: exit %d", cmd, code)
	}
	help := stdout + stderr
	if !strings.HasPrefix(help, "usage: tune "+cmd) {
		t.Errorf("tune %s --help does not start with a usage line:\n%s", cmd, help)
	}
	_, block, ok := strings.Cut(help, "\nflags:\n")
	if !ok {
		t.Fatalf("tune %s --help has no flags block:\n%s", cmd, help)
	}
	var out []helpFlag
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		m := flagLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("tune %s --help: not one flag on one line: %q", cmd, l)
			continue
		}
		out = append(out, helpFlag{m[1], m[2], m[3], m[4]})
	}
	return out
}

// Every flag of every subcommand: one line, a description, the default
// stated (pflag prints non-zero ones; the usage says the others), no
// backquote artefact; sizes say bytes, fractions say percent.
func TestHelpFlagsDescribed(t *testing.T) {
	units := map[string]string{"minbytes": "bytes", "maxbytes": "bytes", "buffsize": "bytes", "min-size": "bytes",
		"threshold": "percent", "tie": "percent", "precision": "percent", "dpi": "dots per inch", "size": "inches",
		"max-time": "duration", "metric": "GB/s", "alpha": "probability"}
	for _, cmd := range subcommands {
		flags := helpFlags(t, cmd)
		if len(flags) == 0 {
			t.Errorf("tune %s: no flags listed", cmd)
		}
		for _, f := range flags {
			if !valueNames[f.value] {
				t.Errorf("tune %s --%s: value name %q (a backquoted word in the usage?)", cmd, f.long, f.value)
			}
			if strings.Contains(f.usage, "`") {
				t.Errorf("tune %s --%s: backquote in %q", cmd, f.long, f.usage)
			}
			if len(strings.Fields(f.usage)) < 3 {
				t.Errorf("tune %s --%s: description %q says too little", cmd, f.long, f.usage)
			}
			if f.value != "" && !strings.Contains(f.usage, "default") && !strings.Contains(f.usage, "required") {
				t.Errorf("tune %s --%s: neither a default nor required in %q", cmd, f.long, f.usage)
			}
			if u, ok := units[f.long]; ok && !strings.Contains(f.usage, u) && f.value != u {
				t.Errorf("tune %s --%s: unit %q not named in %q", cmd, f.long, u, f.usage)
			}
			if f.short == "o" || f.long == "out" {
				t.Errorf("tune %s lists -o/--out: the output file is --output", cmd)
			}
		}
	}
}

// One meaning per short flag: tune's are the perf binaries' (nccl-tests')
// with the same long name, and -o, the perf binaries' reduction operator,
// is not one of them.
func TestShortFlagsMeanWhatPerfsDo(t *testing.T) {
	var o, e bytes.Buffer
	perf.Main(perf.AllReduce, []string{"--help"}, &o, &e)
	perfLong := map[string]string{}
	for _, l := range strings.Split(o.String()+e.String(), "\n") {
		if m := flagLine.FindStringSubmatch(l); m != nil && m[1] != "" {
			perfLong[m[1]] = m[2]
		}
	}
	if perfLong["o"] != "op" {
		t.Fatalf("perf's -o is %q, want op (the test reads perf --help: %d short flags)", perfLong["o"], len(perfLong))
	}
	for _, cmd := range subcommands {
		for _, f := range helpFlags(t, cmd) {
			if f.short != "" && perfLong[f.short] != f.long {
				t.Errorf("tune %s -%s is --%s; in the perf binaries -%s is --%s", cmd, f.short, f.long, f.short, perfLong[f.short])
			}
		}
	}
}

// -o is refused naming --output; the old --out still works, deprecated.
func TestOutputFlag(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"sweep", "fit", "constants", "table", "plot", "baseline", "report"} {
		code, _, stderr := runCLI(cmd, "-o", filepath.Join(dir, "x"), sweep)
		if code != exitBad || !strings.Contains(stderr, "-o is not a tune flag") || !strings.Contains(stderr, "--output") {
			t.Errorf("tune %s -o: exit %d, %q; want exit 2 naming --output", cmd, code, stderr)
		}
	}
	if code, _, stderr := runCLI("gate", "-o", "x"); code != exitBad || !strings.Contains(stderr, "-o is not a tune flag: tune gate writes no output file") {
		t.Errorf("tune gate -o: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("-o", "x"); code != exitBad || !strings.Contains(stderr, "flags follow the command") {
		t.Errorf("tune -o: exit %d, %q", code, stderr)
	}
	out := filepath.Join(dir, "models.json")
	code, stdout, stderr := runCLI("fit", "--out", out, sweep)
	if code != exitOK || !strings.Contains(stderr, "--out has been deprecated, use --output") || !strings.Contains(stdout, "wrote "+out) {
		t.Errorf("tune fit --out: exit %d, %q", code, stderr)
	}
}

// tune --version prints one line naming gccl's version.
func TestVersion(t *testing.T) {
	code, stdout, _ := runCLI("--version")
	if code != exitOK || !strings.HasPrefix(stdout, "tune: gccl ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("tune --version: exit %d, %q", code, stdout)
	}
}
