// Package scripts tests the shell scripts in this directory.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ncclNames are nccl-tests' binaries that an existing script may call.
var ncclNames = []string{
	"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "broadcast_perf", "reduce_perf",
	"alltoall_perf", "gather_perf", "scatter_perf", "sendrecv_perf", "hypercube_perf", "alltoallv_perf",
}

// ourNames are the commands of cmd/ as this project names them.
var ourNames = []string{
	"allreduce_perf", "allgather_perf", "reducescatter_perf", "broadcast_perf", "reduce_perf",
	"alltoall_perf", "alltoallv_perf", "gather_perf", "scatter_perf", "sendrecv_perf", "hypercube_perf", "tune",
}

// goCommand is the go command running this test.
func goCommand(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// install runs install.sh with args and returns its combined output.
func install(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"install.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "GO="+goCommand(t))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestInstall: install.sh refuses to replace a file that is not ours, then
// with --force installs static binaries under both sets of names; every
// nccl-tests name runs a short sweep, names itself and checks its data.
func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary; the full test run covers it")
	}
	prefix := t.TempDir()
	bin := filepath.Join(prefix, "bin")
	foreign := filepath.Join(bin, "all_reduce_perf")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(foreign, []byte("#!/bin/sh\necho real nccl-tests\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := install(t, prefix)
	if err == nil || !strings.Contains(out, foreign) || !strings.Contains(out, "--force") {
		t.Fatalf("a foreign %s: err %v, want a refusal naming it and --force:\n%s", foreign, err, out)
	}
	if _, err := os.Stat(filepath.Join(bin, "allreduce_perf")); err == nil {
		t.Fatalf("the refused install built binaries anyway")
	}

	if out, err := install(t, "--force", prefix); err != nil {
		t.Fatalf("install --force: %v\n%s", err, out)
	}
	for _, name := range ncclNames {
		cmd := exec.Command(filepath.Join(bin, name), "-b", "8", "-e", "64", "-g", "2", "-n", "1", "-w", "0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
			continue
		}
		for _, want := range []string{"# Collective test starting: " + name + "\n", "# Out of bounds values : 0 OK\n"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: output lacks %q:\n%s", name, want, out)
			}
		}
	}
	for _, name := range ourNames {
		info, err := exec.Command(goCommand(t), "version", "-m", filepath.Join(bin, name)).Output()
		if err != nil || !strings.Contains(string(info), "CGO_ENABLED=0") {
			t.Errorf("%s: not a static (CGO_ENABLED=0) Go binary: %v\n%s", name, err, info)
		}
	}
	if out, err := exec.Command(filepath.Join(bin, "tune"), "help").CombinedOutput(); err != nil {
		t.Errorf("tune help: %v\n%s", err, out)
	}

	// Our own binaries and links are never "in the way": with one foreign
	// file back, it alone is listed.
	if err := os.Remove(foreign); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(foreign, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err = install(t, prefix)
	listed := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  "+bin+"/") {
			listed++
		}
	}
	if err == nil || listed != 1 || !strings.Contains(out, "  "+foreign+"\n") {
		t.Errorf("want a refusal listing %s alone (err %v):\n%s", foreign, err, out)
	}
}

// TestInstallUsage: bad arguments are refused with the usage line; make
// install passes PREFIX and FORCE through.
func TestInstallUsage(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"a", "b"}} {
		out, err := install(t, args...)
		if err == nil || !strings.Contains(out, "usage: scripts/install.sh [--force] [PREFIX]") {
			t.Errorf("%v: err %v, want a usage error:\n%s", args, err, out)
		}
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	out, err := exec.Command("make", "-n", "-C", "..", "install", "PREFIX=/opt/x", "FORCE=1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `bash scripts/install.sh --force "/opt/x"`) {
		t.Errorf("make -n install: %v\n%s", err, out)
	}
}
