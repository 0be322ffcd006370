package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/shm"
)

// memCgroup is a memory cgroup the test made.
type memCgroup struct {
	dir      string
	limit    string // the limit file, as the messages name it
	oomCount func() int64
}

// newMemCgroup makes a memory cgroup limited to limit bytes (v2 where the
// root delegates memory, else v1's memory hierarchy), removed when the
// test ends; it skips the test, saying why, where none can be made.
func newMemCgroup(t *testing.T, limit int64) *memCgroup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a memory cgroup needs root")
	}
	name := fmt.Sprintf("gccl-memtest-%d", os.Getpid())
	for _, h := range []struct {
		root, probe, limitFile, events string
	}{
		{"/sys/fs/cgroup", "cgroup.controllers", "memory.max", "memory.events"},                           // v2
		{"/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.limit_in_bytes", "memory.oom_control"}, // v1
	} {
		if _, err := os.Stat(filepath.Join(h.root, h.probe)); err != nil {
			continue // no such hierarchy here
		}
		dir := filepath.Join(h.root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Logf("%s: %v", dir, err)
			continue
		}
		t.Cleanup(func() { removeCgroup(t, dir) })
		lf := filepath.Join(dir, h.limitFile)
		if err := os.WriteFile(lf, []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
			t.Logf("%s: %v (memory not delegated to it?)", lf, err)
			continue
		}
		events := filepath.Join(dir, h.events)
		return &memCgroup{dir: dir, limit: lf, oomCount: func() int64 {
			b, _ := os.ReadFile(events)
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == "oom_kill" {
					n, _ := strconv.ParseInt(f[1], 10, 64)
					return n
				}
			}
			return -1 // not counted by this kernel
		}}
	}
	t.Skip("no writable memory cgroup hierarchy (cgroup v2 with memory delegated, or v1's memory) here")
	return nil
}

// removeCgroup removes an empty cgroup, waiting for its last processes to
// be reaped.
func removeCgroup(t *testing.T, dir string) {
	var err error
	for range 50 {
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("removing the test's cgroup %s: %v", dir, err)
}

// run runs the perf program prog with args in the cgroup (a process of
// this test binary, TestPerfChild, that enters it before it starts).
func (cg *memCgroup) run(t *testing.T, shmDir, prog string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sh := `echo $$ > "$0" && exec "$@"`
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", sh, filepath.Join(cg.dir, "cgroup.procs"),
		os.Args[0], "-test.run=^TestPerfChild$", "--", prog}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1", shm.EnvDir+"="+shmDir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case err != nil:
		t.Fatalf("%s %v: %v", prog, args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// TestMemLimitInCgroup is the trial in a real memory cgroup of 1 GiB: a
// size that cannot fit is refused with a message naming the cgroup's
// limit, a sweep past the limit is cut to what fits and runs to the end,
// in one process and in four (--np 4, which share the limit), and the OOM
// killer never acts.
func TestMemLimitInCgroup(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: fills most of a 1 GiB memory cgroup")
	}
	if raceEnabled {
		t.Skip("-race: the race detector's shadow memory is beyond what the binaries budget")
	}
	cleanBwEnv(t)
	cg := newMemCgroup(t, 1<<30)
	dir := t.TempDir()
	ooms := cg.oomCount()
	refused := regexp.MustCompile(`-b \d+ does not fit in memory: .* this process may take \d+ \(.*under the 1\.0 GiB cgroup v[12] limit \(` + regexp.QuoteMeta(cg.limit) + `\)`)
	reduced := regexp.MustCompile(`(?m)^# Reducing maxBytes to (\d+) due to memory limitation: 1\.0 GiB cgroup v[12] limit \(` + regexp.QuoteMeta(cg.limit) + `\), .* in use; (\d) process(es)? on this host;`)
	for _, tc := range []struct {
		args   []string
		procs  int
		refuse bool
	}{
		{[]string{"-g", "1", "-b", "64G", "-e", "64G"}, 1, true},
		{[]string{"-g", "1", "-b", "8", "-e", "64G", "-f", "16", "-n", "1", "-w", "0"}, 1, false},
		{[]string{"--np", "4", "-b", "400M", "-e", "400M"}, 4, true},
		{[]string{"--np", "4", "-b", "8", "-e", "400M", "-f", "16", "-n", "1", "-w", "0"}, 4, false},
	} {
		r := cg.run(t, dir, "all_reduce_perf", tc.args...)
		t.Logf("%v: exit %d\n%s%s", tc.args, r.code, grepLines(r.stdout, "Reducing"), r.stderr)
		if r.code == 128+int(syscall.SIGKILL) || strings.Contains(r.stderr, "signal 9") {
			t.Errorf("%v: killed (the OOM killer?): exit %d\n%s", tc.args, r.code, r.stderr)
			continue
		}
		if tc.refuse {
			// Every process refuses; the launcher may stop the others
			// before they have said so once the first has.
			if n := len(refused.FindAllString(r.stderr, -1)); r.code != exitInvalidUsage || n < 1 || n > tc.procs {
				t.Errorf("%v: exit %d with %d refusals naming the cgroup's limit, want exit %d and 1 to %d:\n%s", tc.args, r.code, n, exitInvalidUsage, tc.procs, r.stderr)
			}
			continue
		}
		m := reduced.FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil || m[2] != strconv.Itoa(tc.procs) {
			t.Errorf("%v: exit %d; want a run cut to what fits among %d processes:\n%s%s", tc.args, r.code, tc.procs, r.stdout, r.stderr)
			continue
		}
		fit, _ := strconv.ParseInt(m[1], 10, 64)
		rows := jobRows(r.stdout)
		if len(rows) == 0 {
			t.Errorf("%v: no rows:\n%s", tc.args, r.stdout)
			continue
		}
		last, _ := strconv.ParseInt(strings.Fields(rows[len(rows)-1])[0], 10, 64)
		if last > fit || last*16 <= fit {
			t.Errorf("%v: the sweep ends at %d, want the last of 8 x 16^k up to %d", tc.args, last, fit)
		}
	}
	if now := cg.oomCount(); now != ooms {
		t.Errorf("the OOM killer acted in the cgroup: oom_kill %d, was %d", now, ooms)
	}
	noSegmentsLeft(t, dir)
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
