package cli

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/shm"
	"github.com/gccl/gccl/perf"
)

// TestNoSecretsInAnyFile runs every writer of result files (the perf
// binaries' --out, --csv and -J in one process and across processes, tune
// sweep in one process and across processes, tune baseline, tune table,
// tune history add and export, tune report's HTML page) under a job
// token, cloud credentials and a launcher's job id, and greps every file
// they wrote: neither the values nor the variables' names may appear. The
// processes of --np get the launcher's own token and job id
// (GCCL_JOB_TOKEN, GCCL_LAUNCH_JOBID, GCCL_COMM_ID), unknown here: the
// names must not appear either.
func TestNoSecretsInAnyFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every writer, across processes too")
	}
	secrets := map[string]string{
		"GCCL_JOB_TOKEN":          "supersecret123job",
		"AWS_SECRET_ACCESS_KEY":   "wJalrXUtnFEMIK7MDENGbPxRfiCYsecret",
		"GITHUB_TOKEN":            "ghp_secret0123456789",
		"GCCL_LAUNCH_JOBID":       "4242-launchersecret",
		"OMPI_MCA_ess_base_jobid": "31337secretjob",
		"NCCL_IB_SECRET_THING":    "ncclsecretvalue",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("NCCL_DEBUG_SUBSYS", "INIT") // a recorded variable: it must stay
	childIsThisBinary(t)
	t.Setenv(shm.EnvDir, t.TempDir())

	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	var o, e bytes.Buffer
	for _, run := range []struct {
		name string
		args []string
	}{
		{"perf", []string{"-g", "2", "-b", "8", "-e", "1K", "-f", "4", "-n", "3", "-w", "1",
			"--out", at("g.jsonl"), "--csv", at("g.csv"), "-J", at("g.json")}},
		{"perf --np", []string{"--np", "2", "-b", "8", "-e", "1K", "-f", "4", "-n", "3", "-w", "1",
			"--out", at("np.jsonl"), "--csv", at("np.csv"), "-J", at("np.json")}},
	} {
		o.Reset()
		e.Reset()
		if code := perf.Main(perf.AllReduce, run.args, &o, &e); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", run.name, code, o.String(), e.String())
		}
	}
	for _, args := range [][]string{
		{"sweep", "--colls", "allreduce", "--ranks", "2", "--proto", "LL", "--algo", "Ring", "-b", "8", "-e", "64", "-f", "8",
			"-n", "3", "-w", "1", "--max-time", "50ms", "--output", at("sweep.jsonl")},
		{"sweep", "--colls", "allreduce", "--ranks", "2", "--np", "2", "--proto", "LL", "--algo", "Ring", "-b", "8", "-e", "64",
			"-f", "8", "-n", "3", "-w", "1", "--max-time", "50ms", "--output", at("sweepnp.jsonl")},
		{"baseline", "--output", at("base.jsonl"), at("g.jsonl"), at("np.jsonl"), at("sweep.jsonl")},
		{"table", "--output", at("table.json"), "--nccl-csv", at("nccl_tuner.conf"), at("sweep.jsonl"), at("sweepnp.jsonl")},
		{"history", "add", "--db", at("history.db"), "--commit", "c1", at("g.jsonl"), at("np.jsonl"), at("sweep.jsonl")},
		{"history", "export", "--db", at("history.db"), "--output", at("history.jsonl")},
		{"report", "--output", at("report.html"), "--baseline", at("g.jsonl"), at("np.jsonl"), at("sweep.jsonl")},
	} {
		if code, stdout, stderr := runCLI(args...); code != 0 {
			t.Fatalf("tune %s: exit %d\n%s%s", args[0], code, stdout, stderr)
		}
	}

	files, _ := filepath.Glob(at("*"))
	if len(files) < 13 {
		t.Fatalf("the writers wrote %d files, want at least 13: %v", len(files), files)
	}
	recorded := 0
	for _, f := range files {
		b := readMaybeGzip(t, f)
		for k, v := range secrets {
			if bytes.Contains(b, []byte(v)) || bytes.Contains(b, []byte(k)) {
				t.Errorf("%s holds %s or its value", filepath.Base(f), k)
			}
		}
		for _, k := range []string{"GCCL_COMM_ID", "GCCL_LAUNCH_RANK", "GCCL_LAUNCH_SIZE", "_TOKEN", "_SECRET"} {
			if bytes.Contains(b, []byte(k)) {
				t.Errorf("%s holds %s", filepath.Base(f), k)
			}
		}
		if bytes.Contains(b, []byte("NCCL_DEBUG_SUBSYS")) {
			recorded++
		}
	}
	// The check can fail: the records do carry the variables they should.
	if recorded < 6 {
		t.Errorf("NCCL_DEBUG_SUBSYS recorded in %d files, want the 6+ record files", recorded)
	}
}

func readMaybeGzip(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	if strings.TrimSpace(string(b)) == "" {
		t.Errorf("%s is empty", path)
	}
	return b
}
