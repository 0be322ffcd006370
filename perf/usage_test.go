package perf

import (
	"strings"
	"testing"
)

// --version prints one line naming the program and gccl's version, and
// exits 0 without running anything, on every binary.
func TestVersion(t *testing.T) {
	for _, tc := range Tests {
		r := runPerf(t, tc, "--version", "-g", "1000") // nothing else is checked
		if r.code != exitOK || !strings.HasPrefix(r.stdout, tc.Prog+": gccl "+Version) || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("%s --version: exit %d, stdout %q", tc.Prog, r.code, r.stdout)
		}
	}
}

// A bandwidth floor that is not a number is refused before anything runs.
func TestMinBandwidthInvalid(t *testing.T) {
	for _, k := range minBwEnv {
		cleanBwEnv(t)
		t.Setenv(k, "fast")
		r := runPerf(t, AllReduce, tiny...)
		if r.code != exitInvalidUsage || !strings.Contains(r.stderr, k+`="fast"`) || len(dataRows(r.stdout)) != 0 {
			t.Errorf("%s=fast: exit %d, stderr %q, %d rows; want exit %d naming it and no rows", k, r.code, r.stderr, len(dataRows(r.stdout)), exitInvalidUsage)
		}
	}
}

// More ranks than the data check covers: a clear usage error with the way
// out (-c 0), never a panic; unchecked, they run.
func TestManyRanks(t *testing.T) {
	cleanBwEnv(t)
	r := runPerf(t, AllReduce, "-g", "1000", "-b", "8", "-e", "8")
	if r.code != exitInvalidUsage || !strings.Contains(r.stderr, "1000 ranks") || !strings.Contains(r.stderr, "-c 0") {
		t.Errorf("-g 1000: exit %d, stderr %q", r.code, r.stderr)
	}
	if testing.Short() {
		return
	}
	r = runPerf(t, AllReduce, "-g", "65", "-c", "0", "-b", "8", "-e", "8", "-n", "1", "-w", "0")
	if r.code != exitOK || len(dataRows(r.stdout)) != 1 {
		t.Errorf("-g 65 -c 0: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A factor or step that would overflow the next size ends the sweep; sizes
// only grow.
func TestSizeListOverflow(t *testing.T) {
	for _, c := range []struct{ min, max, step, factor int64 }{
		{8, 1 << 40, 0, 1 << 62}, {8, 1<<63 - 1, 0, 3}, {1 << 62, 1<<63 - 1, 1 << 62, 1}, {0, 1 << 62, 0, 1 << 61},
	} {
		s := sizeList(c.min, c.max, c.step, c.factor)
		for i := 1; i < len(s); i++ {
			if s[i] <= s[i-1] && !(i == 1 && s[0] == 0) || s[i] > c.max {
				t.Errorf("%+v: sizes %v do not grow within max", c, s)
			}
		}
	}
}

// Started as one of several processes by a launcher that gives no way to
// meet, a binary fails at once saying what to set, rather than run N
// one-process jobs; a launcher's job of one runs.
func TestLauncherOfSeveralProcesses(t *testing.T) {
	cleanBwEnv(t)
	unsetenv(t, "GCCL_JOB_TOKEN")
	unsetenv(t, "GCCL_COMM_ID")
	for _, c := range []struct {
		env  [][2]string
		want string
	}{
		{[][2]string{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}}, "openmpi says 4 processes but gives no job id; set GCCL_COMM_ID"},
		{[][2]string{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_ID", "7"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS_PER_NODE", "1"}}, "set GCCL_COMM_ID=host:port (the rank-0 host and a free port), or GCCL_SINGLE_HOST=1"},
		{[][2]string{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}}, "no job token: set GCCL_JOB_TOKEN"},
	} {
		for _, kv := range c.env {
			t.Setenv(kv[0], kv[1])
		}
		r := runPerf(t, AllReduce, tiny...)
		if r.code != exitInvalidUsage || !strings.Contains(r.stderr, c.want) || len(dataRows(r.stdout)) != 0 {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.env, r.code, r.stderr, c.want)
		}
		for _, kv := range c.env {
			unsetenv(t, kv[0])
		}
	}
	t.Setenv("OMPI_COMM_WORLD_RANK", "0")
	t.Setenv("OMPI_COMM_WORLD_SIZE", "1")
	if r := runPerf(t, AllReduce, tiny...); r.code != exitOK {
		t.Errorf("mpirun -np 1: exit %d: %s", r.code, r.stderr)
	}
}
