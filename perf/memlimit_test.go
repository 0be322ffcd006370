package perf

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/sysmem"
)

// fakeMem makes the runs of the test see bound l (and err) instead of the
// machine's.
func fakeMem(t *testing.T, l sysmem.Limit, err error) {
	t.Helper()
	old := memLimit
	memLimit = func() (sysmem.Limit, error) { return l, err }
	t.Cleanup(func() { memLimit = old })
}

// cgroupMiB is a cgroup v2 bound of max MiB with left MiB left.
func cgroupMiB(max, left int64) sysmem.Limit {
	return sysmem.Limit{Max: max << 20, Used: (max - left) << 20, Left: left << 20,
		Kind: "cgroup v2 limit", Path: "/sys/fs/cgroup/job/memory.max"}
}

// countingBackend is the embedded stack, counting Init calls and noting
// the Go runtime's soft memory limit during the run.
type countingBackend struct {
	Embedded
	inits      int
	softDuring int64
}

func (b *countingBackend) Init(n int, rc RunConfig) ([]Comm, error) {
	b.inits++
	b.softDuring = debug.SetMemoryLimit(-1)
	return b.Embedded.Init(n, rc)
}

// TestMemLimitReducesMaxBytes: when the largest sizes do not fit, -e is
// lowered with nccl-tests' line, which names the bound, the processes
// sharing it and the buffers counted; the sweep stops at the new -e.
func TestMemLimitReducesMaxBytes(t *testing.T) {
	cleanBwEnv(t)
	fakeMem(t, cgroupMiB(3, 1), nil)
	before := debug.SetMemoryLimit(-1)
	be := &countingBackend{}
	r := runWith(t, AllReduce, be, "-g", "2", "-b", "8", "-e", "1M", "-f", "8", "-n", "2", "-w", "1")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// 3/4 of 1 MiB for 2 ranks x 3 buffers, less allocBuffers' 64 bytes.
	fit := int64(1<<20)/4*3/6 - 64
	want := fmt.Sprintf("# Reducing maxBytes to %d due to memory limitation: 3.0 MiB cgroup v2 limit (/sys/fs/cgroup/job/memory.max), 2.0 MiB in use; 1 process on this host; 3 buffers per rank (send, recv, expected values)", fit)
	if !hasLine(r.stdout, want) {
		t.Errorf("no line\n%s\nin\n%s", want, r.stdout)
	}
	if !strings.Contains(r.stdout, fmt.Sprintf(" maxBytes %d ", fit)) {
		t.Errorf("the header does not show maxBytes %d:\n%s", fit, r.stdout)
	}
	rows := dataRows(r.stdout)
	if len(rows) == 0 {
		t.Fatalf("no rows:\n%s", r.stdout)
	}
	for _, row := range rows {
		if size, _ := strconv.ParseInt(strings.Fields(row)[0], 10, 64); size > fit {
			t.Errorf("a row past the lowered -e: %s", row)
		}
	}
	if last := strings.Fields(rows[len(rows)-1])[0]; last != "32768" {
		t.Errorf("the sweep ends at %s, want 32768 (8 x 8^k up to %d)", last, fit)
	}
	if be.softDuring >= before {
		t.Errorf("the soft memory limit during the run is %d, not below the %d before it", be.softDuring, before)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("the soft memory limit is %d after the run, want %d as before", after, before)
	}
}

// TestMemLimitRefusesMinBytes: when even -b does not fit, the run is a
// usage error before anything is allocated (no communicator made), and
// the message names the size, the bytes needed, the bound and its
// source, and what fits.
func TestMemLimitRefusesMinBytes(t *testing.T) {
	cleanBwEnv(t)
	fakeMem(t, cgroupMiB(3, 1), nil)
	be := &countingBackend{}
	r := runWith(t, AllReduce, be, "-g", "2", "-b", "1M", "-e", "2M")
	if r.code != exitInvalidUsage {
		t.Errorf("exit %d, want %d", r.code, exitInvalidUsage)
	}
	if be.inits != 0 {
		t.Errorf("%d communicator sets made before the refusal", be.inits)
	}
	if strings.Contains(r.stdout, "# Using devices") || len(dataRows(r.stdout)) > 0 {
		t.Errorf("a refused run printed a table:\n%s", r.stdout)
	}
	want := "all_reduce_perf: -b 1048576 does not fit in memory: 2 ranks x 3 buffers (send, recv, expected values) of 1048640 bytes need 6291840 bytes (6.0 MiB), " +
		"and this process may take 786432 (768.0 KiB: 3/4 of the 1.0 MiB left under the 3.0 MiB cgroup v2 limit (/sys/fs/cgroup/job/memory.max), 2.0 MiB in use); " +
		"sizes up to 131008 bytes fit; -c 0 without --check-timed drops the expected values\n"
	if r.stderr != want {
		t.Errorf("stderr\n%q\nwant\n%q", r.stderr, want)
	}
}

// TestMemLimitKeepAllSizes: a program that needs every size (tune sweep)
// gets a -e that does not fit refused, not lowered.
func TestMemLimitKeepAllSizes(t *testing.T) {
	cleanBwEnv(t)
	fakeMem(t, cgroupMiB(3, 1), nil)
	KeepAllSizes = true
	defer func() { KeepAllSizes = false }()
	r := runPerf(t, AllReduce, "-g", "2", "-b", "8", "-e", "1M", "-c", "0")
	if r.code != exitInvalidUsage || !strings.HasPrefix(r.stderr, "all_reduce_perf: -e 1048576 does not fit in memory: 2 ranks x 2 buffers (send, recv) ") ||
		!strings.Contains(r.stderr, "sizes up to 196544 bytes fit\n") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestMemLimitUnknown: without /proc/meminfo nothing is capped, in
// silence; a cgroup that cannot be read leaves the host's bound, with a
// note saying so.
func TestMemLimitUnknown(t *testing.T) {
	cleanBwEnv(t)
	fakeMem(t, sysmem.Limit{}, fmt.Errorf("sysmem: %w", fs.ErrNotExist))
	r := runPerf(t, AllReduce, "-g", "2", "-b", "8", "-e", "64K", "-f", "64", "-n", "1", "-w", "0")
	if r.code != 0 || strings.Contains(r.stdout, "Reducing") || strings.Contains(r.stdout, "# Note: memory") {
		t.Errorf("exit %d; without a bound the run is not capped and says nothing:\n%s%s", r.code, r.stdout, r.stderr)
	}
	host := sysmem.Limit{Max: 4 << 20, Used: 3 << 20, Left: 1 << 20, Kind: "host memory", Path: "/proc/meminfo"}
	fakeMem(t, host, errors.New(`sysmem: /sys/fs/cgroup/j/memory.max: "x" is not a byte count (or "max")`))
	r = runPerf(t, AllReduce, "-g", "2", "-b", "8", "-e", "1M", "-f", "64", "-n", "1", "-w", "0")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		`# Note: memory: sysmem: /sys/fs/cgroup/j/memory.max: "x" is not a byte count (or "max"); -e is capped by the host's memory only`,
		"# Reducing maxBytes to 131008 due to memory limitation: 4.0 MiB host memory (/proc/meminfo), 3.0 MiB in use; 1 process on this host; 3 buffers per rank (send, recv, expected values)",
	} {
		if !hasLine(r.stdout, want) {
			t.Errorf("no line\n%s\nin\n%s", want, r.stdout)
		}
	}
}

// namedBackend is the embedded stack under another name (for the count
// of buffers that only the embedded stack allocates).
type namedBackend struct {
	Embedded
	name BackendName
}

func (b namedBackend) Name() BackendName { return b.name }

// TestRankBuffers: what a rank holds at -e, as limitMemory counts it.
func TestRankBuffers(t *testing.T) {
	for _, tc := range []struct {
		test    *Test
		backend string
		args    []string
		want    string
	}{
		{AllReduce, "embedded", nil, "3: send, recv, expected values"},
		{AllReduce, "embedded", []string{"-c", "0"}, "2: send, recv"},
		{AllReduce, "embedded", []string{"-c", "0", "--check-timed"}, "3: send, recv, expected values"},
		{AllReduce, "embedded", []string{"-K", "2"}, "4: send, recv, expected values, -K reference"},
		{AllGather, "embedded", []string{"-c", "0"}, "2: send, recv"},
		// lib/ccl's in-place alltoall stages each call until it finishes:
		// -w 5 plus one plus -n 20 in flight, and one uncollected.
		{AlltoAll, "embedded", nil, "30: send, recv, expected values, in-place staging x27"},
		{AlltoAll, "embedded", []string{"-m", "3", "-n", "2", "-w", "1"}, "16: send, recv, expected values, in-place staging x13"},
		{AlltoAll, "embedded", []string{"--out-of-place-only"}, "3: send, recv, expected values"},
		{AlltoAll, "nccl", []string{"-c", "0"}, "2: send, recv"},
		{AlltoAll, "embedded", []string{"-n", "5000", "-c", "0"}, "1027: send, recv, in-place staging x1025"},
		// alltoallv keeps one staging buffer, grown with the sizes.
		{AlltoAllv, "embedded", nil, "5: send, recv, expected values, in-place staging x2"},
		{AlltoAllv, "nccl", []string{"--out-of-place-only"}, "3: send, recv, expected values"},
	} {
		o, err := parseOptions(tc.test.Prog, tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		e := &engine{t: tc.test, o: o, be: namedBackend{name: BackendName(tc.backend)}}
		bufs := e.rankBuffers()
		if got := fmt.Sprintf("%d: %s", countBufs(bufs), listBufs(bufs)); got != tc.want {
			t.Errorf("%s %s %v: %s, want %s", tc.test.Prog, tc.backend, tc.args, got, tc.want)
		}
	}
}

// TestMemShareWording: where the budget comes from, for one process and
// several.
func TestMemShareWording(t *testing.T) {
	l := cgroupMiB(3072, 3000)
	for procs, want := range map[int]string{
		1: "3/4 of the 2.9 GiB left under the 3.0 GiB cgroup v2 limit (/sys/fs/cgroup/job/memory.max), 72.0 MiB in use",
		4: "3/4 of 1/4 of the 2.9 GiB left (4 processes on this host) under the 3.0 GiB cgroup v2 limit (/sys/fs/cgroup/job/memory.max), 72.0 MiB in use",
	} {
		if got := (memShare{Bytes: l.Left / int64(procs), Procs: procs, Limit: l}).why(); got != want {
			t.Errorf("%d processes:\n%s\nwant\n%s", procs, got, want)
		}
	}
}

// memLeftEnv gives each process of a --np test its own bound:
// "left0,left1,..." in bytes by launcher rank (TestPerfChild).
const memLeftEnv = "GCCL_TEST_MEM_LEFT"

// fakeChildMem is TestPerfChild's side of memLeftEnv.
func fakeChildMem() {
	v, ok := os.LookupEnv(memLeftEnv)
	if !ok {
		return
	}
	rank, _ := strconv.Atoi(os.Getenv("GCCL_LAUNCH_RANK"))
	lefts := strings.Split(v, ",")
	left, _ := strconv.ParseInt(lefts[rank%len(lefts)], 10, 64)
	l := sysmem.Limit{Max: 2 * left, Used: left, Left: left, Kind: "cgroup v2 limit", Path: fmt.Sprintf("/fake/rank%d/memory.max", rank)}
	memLimit = func() (sysmem.Limit, error) { return l, nil }
}

// TestMemLimitAcrossProcesses: the processes of a job share the bound of
// their host, and sweep the same sizes: the least share of any process,
// which the message names.
func TestMemLimitAcrossProcesses(t *testing.T) {
	cleanBwEnv(t)
	dir := t.TempDir()
	asChildren(t, dir)
	t.Setenv(memLeftEnv, strconv.Itoa(8<<20)+","+strconv.Itoa(2<<20))
	var out, errb strings.Builder
	code := Main(AllReduce, []string{"--np", "2", "-b", "8", "-e", "1M", "-f", "8", "-n", "2", "-w", "1"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	// Rank 1's 2 MiB over 2 processes, 3/4 of it for 3 buffers.
	fit := int64(2<<20)/2/4*3/3 - 64
	want := fmt.Sprintf("# Reducing maxBytes to %d due to memory limitation: 4.0 MiB cgroup v2 limit (/fake/rank1/memory.max), 2.0 MiB in use; 2 processes on this host; 3 buffers per rank (send, recv, expected values)", fit)
	if !hasLine(out.String(), want) {
		t.Errorf("no line\n%s\nin\n%s", want, out.String())
	}
	checkJobTable(t, out.String(), 2, 2)
	noSegmentsLeft(t, dir)

	// A -b that fits no process: each refuses (the launcher may stop the
	// others before they have said so once the first has), nothing starts.
	out.Reset()
	errb.Reset()
	code = Main(AllReduce, []string{"--np", "2", "-b", "1M", "-e", "1M"}, &out, &errb)
	if code != exitInvalidUsage {
		t.Errorf("exit %d, want %d:\n%s", code, exitInvalidUsage, errb.String())
	}
	re := regexp.MustCompile(`\[rank (\d)\] all_reduce_perf \[process \d of 2, pid \d+\]: -b 1048576 does not fit in memory: .*\(2 processes on this host\) under the 4.0 MiB cgroup v2 limit \(/fake/rank1/memory.max\)`)
	if n := len(re.FindAllString(errb.String(), -1)); n < 1 || n > 2 {
		t.Errorf("%d processes refused with the agreed bound, want 1 or 2:\n%s", n, errb.String())
	}
	if strings.Contains(out.String(), "# Using devices") {
		t.Errorf("a refused job printed a table:\n%s", out.String())
	}
	noSegmentsLeft(t, dir)
}

// TestNPCommID: --np makes its own bootstrap root. A GCCL_COMM_ID from
// the environment that no launch could use is a usage error that says
// so; a valid one is noted as ignored, as is a job token.
func TestNPCommID(t *testing.T) {
	cleanBwEnv(t)
	dir := t.TempDir()
	asChildren(t, dir)
	t.Setenv("GCCL_COMM_ID", "garbage")
	r := runPerf(t, AllReduce, "--np", "2", "-b", "8", "-e", "8")
	want := `all_reduce_perf: --np 2: launch: invalid environment: invalid GCCL_COMM_ID="garbage": address garbage: missing port in address (want host:port, e.g. 10.0.0.1:29500 or [::1]:29500); --np starts its own bootstrap root: unset GCCL_COMM_ID` + "\n"
	if r.code != exitInvalidUsage || r.stderr != want {
		t.Errorf("exit %d, stderr\n%q\nwant exit %d,\n%q", r.code, r.stderr, exitInvalidUsage, want)
	}
	t.Setenv("GCCL_COMM_ID", "192.0.2.1:29500") // nothing listens there: the job must not use it
	t.Setenv("GCCL_JOB_TOKEN", "a-secret-of-another-job")
	r = runPerf(t, AllReduce, "--np", "2", "-b", "8", "-e", "8", "-n", "1", "-w", "0")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	for _, n := range []string{
		"launch: --np starts its own bootstrap root; GCCL_COMM_ID=192.0.2.1:29500 is ignored\n",
		"launch: --np makes a fresh job token; GCCL_JOB_TOKEN is ignored\n",
	} {
		if !strings.Contains(r.stderr, n) {
			t.Errorf("no note %q in\n%s", n, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "a-secret-of-another-job") {
		t.Errorf("the token's value was shown:\n%s", r.stderr)
	}
	checkJobTable(t, r.stdout, 2, 2)
	noSegmentsLeft(t, dir)
}
