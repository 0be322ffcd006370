package cli

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/shm"
	"github.com/gccl/gccl/perf"
	"github.com/gccl/gccl/results"
)

// TestTuneChild is a process of perf --np started by tune sweep --np:
// "tune _perf PROG ARGS" with this test binary standing in for tune.
func TestTuneChild(t *testing.T) {
	if os.Getenv("GCCL_TEST_TUNE_CHILD") == "" {
		t.Skip("a process of tune sweep --np's test")
	}
	os.Exit(Run(flag.Args(), os.Stdout, os.Stderr))
}

// childIsThisBinary makes perf's child processes ("tune _perf PROG") this
// test binary, running TestTuneChild, for the rest of the test.
func childIsThisBinary(t *testing.T) {
	old := perf.ChildCommand
	perf.ChildCommand = func(test *perf.Test) (string, []string, error) {
		return os.Args[0], []string{"-test.run=^TestTuneChild$", "--", perfCommand, test.Prog}, nil
	}
	t.Cleanup(func() { perf.ChildCommand = old })
	t.Setenv("GCCL_TEST_TUNE_CHILD", "1")
}

// tune sweep --np 2 measures each shape across two processes of half the
// ranks each; the records say so.
func TestSweepAcrossProcesses(t *testing.T) {
	childIsThisBinary(t)
	dir := t.TempDir()
	t.Setenv(shm.EnvDir, dir)
	out := filepath.Join(t.TempDir(), "np.jsonl")
	code, stdout, stderr := runCLI("sweep", "--colls", "allreduce", "--ranks", "4", "--np", "2", "--proto", "LL,Simple",
		"--algo", "Ring", "-b", "8", "-e", "512", "-f", "8", "-n", "3", "-w", "1", "--max-time", "50ms", "--output", out)
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	recs, err := results.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * 3; len(recs) != want { // auto, Ring/LL, Ring/Simple x 3 sizes
		t.Fatalf("%d records, want %d", len(recs), want)
	}
	for _, r := range recs {
		if r.NRanks != 4 || r.NProcs != 2 || r.RanksPerProc != 2 || r.Launcher != "gccl" || r.Wrong > 0 {
			t.Fatalf("record %+v: want 4 ranks over 2 processes of 2 by gccl's launcher", r)
		}
	}
	if code, _, stderr := runCLI("sweep", "--ranks", "3", "--np", "2", "--output", out); code == 0 || !strings.Contains(stderr, "multiples of --np") {
		t.Errorf("3 ranks over 2 processes: exit %d, %s", code, stderr)
	}
	// --hosts 2: the two processes are two hosts; the records say so, and
	// --algo all leaves OneShot out (hosts share no board).
	hostsOut := filepath.Join(t.TempDir(), "hosts.jsonl")
	code, stdout, stderr = runCLI("sweep", "--colls", "allreduce", "--ranks", "2", "--np", "2", "--hosts", "2", "--proto", "LL",
		"--algo", "all", "-b", "8", "-e", "64", "-f", "8", "-n", "3", "-w", "1", "--max-time", "50ms", "--output", hostsOut)
	if code != 0 {
		t.Fatalf("--hosts 2: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	hrecs, err := results.ReadFile(hostsOut)
	if err != nil || len(hrecs) == 0 {
		t.Fatalf("--hosts 2: records %v (%d)\n%s\n%s", err, len(hrecs), stdout, stderr)
	}
	for _, r := range hrecs {
		if r.NHosts != 2 || r.NProcs != 2 || r.Wrong > 0 || r.Algorithm == "OneShot" {
			t.Errorf("--hosts 2: record %+v: want 2 hosts of one process, 0 wrong, no OneShot", r)
		}
	}
	// --netns: the two hosts are network namespaces of their own.
	if _, err := exec.LookPath("ip"); err == nil && os.Geteuid() == 0 {
		nsOut := filepath.Join(t.TempDir(), "netns.jsonl")
		code, stdout, stderr = runCLI("sweep", "--colls", "allreduce", "--ranks", "2", "--np", "2", "--hosts", "2", "--netns",
			"--proto", "LL", "--algo", "Ring", "-b", "8", "-e", "64", "-f", "8", "-n", "3", "-w", "1", "--max-time", "50ms", "--output", nsOut)
		if code != 0 {
			t.Fatalf("--netns: exit %d:\n%s\n%s", code, stdout, stderr)
		}
		nrecs, err := results.ReadFile(nsOut)
		if err != nil || len(nrecs) != 2*2 { // auto, Ring/LL x 8, 64 B
			t.Fatalf("--netns: records %v (%d, want 4)", err, len(nrecs))
		}
		for _, r := range nrecs {
			if r.NHosts != 2 || r.Wrong > 0 {
				t.Errorf("--netns: record %+v: want 2 hosts, 0 wrong", r)
			}
		}
	} else {
		t.Log("--netns not run: it needs root and iproute2")
	}
	if len(hrecs) != 3*2 { // auto, Ring/LL, Tree/LL x 8, 64 B
		t.Errorf("--hosts 2: %d records, want 6", len(hrecs))
	}
	if code, _, stderr := runCLI("sweep", "--ranks", "2", "--np", "2", "--hosts", "2", "--algo", "OneShot", "--output", out); code == 0 || !strings.Contains(stderr, "one host") {
		t.Errorf("--algo OneShot across hosts: exit %d, %s", code, stderr)
	}
	for _, bad := range [][]string{{"--hosts", "2"}, {"--np", "4", "--hosts", "3", "--ranks", "4"}, {"--np", "2", "--netns"}} {
		if code, _, stderr := runCLI(append([]string{"sweep", "--output", out}, bad...)...); code == 0 || !strings.Contains(stderr, "--hosts") {
			t.Errorf("%v: exit %d, %s", bad, code, stderr)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("segments left: %v", left)
	}
}
