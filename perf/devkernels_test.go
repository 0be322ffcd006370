package perf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/results"
)

// devSizes exercise the coops' split: empty and one-element calls, counts
// that leave some coops nothing, and ones that are not a whole number of
// cache lines, chunks or coops.
var devSizes = []string{"--sizes", "8,40,1000,12K,100K", "-n", "2", "-w", "1", "-c", "1"}

// checkDevRows checks a -D run: exit 0, its header line, and every row
// checked with 0 wrong out of place (and in place for allreduce; N/A for
// alltoall, as nccl-tests).
func checkDevRows(t *testing.T, tt *Test, r result, impl string, nRows int) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "# Device implementation: ") || !strings.Contains(r.stdout, " "+impl+": ") {
		t.Errorf("no device implementation line naming %s:\n%s", impl, r.stdout)
	}
	if !hasLine(r.stdout, "# Out of bounds values : 0 OK") {
		t.Errorf("wrong elements:\n%s", r.stdout)
	}
	rows := dataRows(r.stdout)
	if len(rows) != nRows {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), nRows, r.stdout)
	}
	inPlace := "0"
	if tt.naInPlace {
		inPlace = "N/A"
	}
	for _, row := range rows {
		f := strings.Fields(row)
		per := (len(f) - 5) / 2 // time, algbw, busbw, #wrong (and -K's bit differences)
		if (len(f) != 13 && len(f) != 15) || f[8] != "0" || f[5+per+3] != inPlace {
			t.Errorf("row %q: want #wrong 0 out of place and %s in place", row, inPlace)
		}
	}
}

// TestDeviceKernels is the correctness matrix: allreduce and alltoall,
// -D 1 and 2, 1 to 8 ranks in one process, 1, 3 and 16 coops, each case
// on two types (every type over the matrix), every element checked.
// -short runs one coop count per rank count, in turn (each run costs the
// harness's fixed ~0.7 s).
func TestDeviceKernels(t *testing.T) {
	cleanBwEnv(t)
	manyCoops(t)
	types := reduce.AllDataTypes()
	i := 0
	// In place, alltoall's kernels stage the rank's own blocks first
	// (alltoAllStage): its result is right, so it is checked here too
	// (alltoall_perf reports N/A in place, as nccl-tests).
	checked := *AlltoAll
	checked.naInPlace = false
	for _, tt := range []*Test{AllReduce, &checked} {
		for _, d := range []int{1, 2} {
			for j, n := range []int{1, 2, 3, 5, 8} {
				vs := []int{1, 3, 16}
				if testing.Short() {
					vs = vs[(j+d)%3 : (j+d)%3+1]
				}
				for _, v := range vs {
					dts := types[i%len(types)].String() + "," + types[(i+3)%len(types)].String()
					i++
					t.Run(fmt.Sprintf("%s/D%d/n%d/V%d/%s", tt.Collective, d, n, v, dts), func(t *testing.T) {
						r := runPerf(t, tt, args(devSizes, []string{"-R", "2", "-D", strconv.Itoa(d), "-V", strconv.Itoa(v), "-g", strconv.Itoa(n), "-d", dts})...)
						checkDevRows(t, tt, r, fmt.Sprintf("lsa-D%d", d), 2*5)
					})
				}
			}
		}
	}
}

// manyCoops makes the LSA kernels run every -V coop, and several on
// launches of a few hundred bytes, whatever the host's processors, until
// the test ends: the splits and barriers of many coops are checked on a
// 2-core machine too.
func manyCoops(t *testing.T) {
	savedCan, savedWork := coopsCan, coopWork
	coopsCan, coopWork = func(r *devRank) int { return r.v }, 256
	t.Cleanup(func() { coopsCan, coopWork = savedCan, savedWork })
}

// TestDeviceGinKernels is the GIN matrix: alltoall -D 3 (GIN puts) and
// -D 4 (LSA inside a host, GIN across), 1 to 8 ranks in one process on
// one host and on several (--ranks-per-host: every divisor layout of
// interest), 1 and 3 coops, two types per case, in place checked too
// (the stage window). -short runs one coop count per case, in turn.
func TestDeviceGinKernels(t *testing.T) {
	cleanBwEnv(t)
	types := reduce.AllDataTypes()
	checked := *AlltoAll
	checked.naInPlace = false
	layouts := map[int][]int{1: {0}, 2: {0, 1}, 3: {0, 1}, 5: {0, 1}, 8: {0, 4, 2}} // ranks per host (0: one host)
	i := 0
	for _, d := range []int{3, 4} {
		impl := map[int]string{3: "gin-D3", 4: "hybrid-D4"}[d]
		for _, n := range []int{1, 2, 3, 5, 8} {
			for _, rph := range layouts[n] {
				vs := []int{1, 3}
				if testing.Short() {
					vs = vs[i%2 : i%2+1]
				}
				for _, v := range vs {
					dts := types[i%len(types)].String() + "," + types[(i+5)%len(types)].String()
					i++
					t.Run(fmt.Sprintf("D%d/n%d/rph%d/V%d/%s", d, n, rph, v, dts), func(t *testing.T) {
						a := []string{"-R", "2", "-D", strconv.Itoa(d), "-V", strconv.Itoa(v), "-g", strconv.Itoa(n), "-d", dts}
						if rph > 0 {
							a = append(a, "--ranks-per-host", strconv.Itoa(rph))
						}
						r := runPerf(t, &checked, args(devSizes, a)...)
						checkDevRows(t, &checked, r, impl, 2*5)
					})
				}
			}
		}
	}
}

// TestDeviceGinCheckBites: a GIN kernel whose puts go nowhere useful
// (every rank's blocks put back to itself) is caught by the check.
func TestDeviceGinCheckBites(t *testing.T) {
	cleanBwEnv(t)
	k := devKernels["alltoall"][3]
	saved := *k
	t.Cleanup(func() { *k = saved })
	k.coop = func(c *coop) error {
		if err := c.hbar.Sync(); err != nil {
			return err
		}
		return c.hbar.Sync()
	}
	r := runPerf(t, AlltoAll, "-R", "2", "-D", "3", "-V", "2", "-g", "4", "--ranks-per-host", "2", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0")
	if r.code != exitDataError || strings.Contains(r.stdout, "values : 0 OK") {
		t.Errorf("a GIN kernel that puts nothing: exit %d, want %d and wrong elements:\n%s%s", r.code, exitDataError, r.stdout, r.stderr)
	}
}

// TestDeviceKernelsVariants: ranks on several threads (-t: with one rank
// a thread, launches run inline on it), -m 2, -u 1
// (the windows' offsets off the element's natural alignment of a cache
// line), --check-timed and -K: each still 0 wrong.
func TestDeviceKernelsVariants(t *testing.T) {
	cleanBwEnv(t)
	for _, extra := range [][]string{
		{"-t", "3", "-g", "1"},
		{"-t", "3", "-g", "1", "-m", "2"},
		{"-g", "4", "-m", "2"},
		{"-g", "3", "-u", "1"},
		{"-g", "3", "--check-timed"},
		{"-g", "2", "-K", "1"},
	} {
		for _, tt := range []*Test{AllReduce, AlltoAll} {
			t.Run(tt.Collective+"/"+strings.Join(extra, " "), func(t *testing.T) {
				r := runPerf(t, tt, args(devSizes, []string{"-R", "2", "-D", "2", "-V", "4", "-d", "int32"}, extra)...)
				checkDevRows(t, tt, r, "lsa-D2", 5)
			})
		}
	}
}

// TestDeviceGinVariants: the GIN kernels with ranks on several threads
// (-t; with one rank a thread, inline), -m 2 (launches back to back: the signals go on from the last
// one), -u 1 and --check-timed, on two hosts: each still 0 wrong.
func TestDeviceGinVariants(t *testing.T) {
	cleanBwEnv(t)
	checked := *AlltoAll
	checked.naInPlace = false
	for i, extra := range [][]string{
		{"-t", "2", "-g", "2"},
		{"-g", "4", "-m", "2"},
		{"-g", "4", "-u", "1"},
		{"-g", "2", "--check-timed"},
		{"-t", "4", "-g", "1"},
		{"-t", "4", "-g", "1", "-m", "2"},
	} {
		d := 3 + i%2
		t.Run(fmt.Sprintf("D%d/%s", d, strings.Join(extra, " ")), func(t *testing.T) {
			r := runPerf(t, &checked, args(devSizes, []string{"-R", "2", "-D", strconv.Itoa(d), "-V", "2", "-d", "int32", "--ranks-per-host", "2"}, extra)...)
			checkDevRows(t, &checked, r, map[int]string{3: "gin-D3", 4: "hybrid-D4"}[d], 5)
		})
	}
}

// TestDeviceKernelCheckBites: a kernel that stores nothing is caught by
// the check (the outputs are poisoned before it runs): the matrix's 0
// wrong means the kernels wrote every element.
func TestDeviceKernelCheckBites(t *testing.T) {
	cleanBwEnv(t)
	for _, coll := range []*Test{AllReduce, AlltoAll} {
		t.Run(coll.Collective, func(t *testing.T) {
			k := devKernels[coll.Collective][1]
			saved := *k
			t.Cleanup(func() { *k = saved })
			k.coop = lsaCoop(nil, func(c *coop) {}, nil)
			r := runPerf(t, coll, "-R", "2", "-D", "1", "-V", "2", "-g", "3", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0")
			if r.code != exitDataError || !strings.Contains(r.stdout, "Out of bounds values") || strings.Contains(r.stdout, "values : 0 OK") {
				t.Errorf("a kernel that stores nothing: exit %d, want %d and wrong elements:\n%s%s", r.code, exitDataError, r.stdout, r.stderr)
			}
		})
	}
}

// TestDeviceFlagErrors: every combination -D cannot run gets exit 6 and
// a message naming the problem and what would be valid.
func TestDeviceFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		tt   *Test
		args []string
		want []string
	}{
		{AllReduce, []string{"-D", "1"}, []string{"-D/--device_implementation 1 needs -R 2", "symmetric windows"}},
		{AllReduce, []string{"-R", "1", "-D", "2"}, []string{"needs -R 2"}},
		{AllReduce, []string{"-R", "3"}, []string{"invalid -R/--local_register 3", "2 (symmetric windows)"}},
		{AllReduce, []string{"-R", "2", "-D", "5"}, []string{"invalid -D/--device_implementation 5", "1 to 4"}},
		{AllReduce, []string{"-R", "2", "-D", "3"}, []string{"multimem (NVLink SHARP) has no CPU counterpart", "use -D 1 or 2"}},
		{AllReduce, []string{"-R", "2", "-D", "4"}, []string{"multimem (NVLink SHARP) has no CPU counterpart"}},
		{AlltoAll, []string{"-R", "2", "-D", "3", "-g", "5", "--ranks-per-host", "2"}, []string{"gin-D3", "--ranks-per-host 2 does not divide the 5 ranks"}},
		{AlltoAll, []string{"-R", "2", "-D", "4", "-g", "3", "--ranks-per-host", "2"}, []string{"hybrid-D4", "does not divide the 3 ranks"}},
		{AlltoAll, []string{"-R", "2", "-D", "4", "-o", "max"}, []string{"sums only"}},
		{AllGather, []string{"-R", "2", "-D", "1"}, []string{"allgather has no device kernel", "allreduce (-D 1, 2) and alltoall (-D 1, 2, 3, 4)"}},
		{Broadcast, []string{"-R", "2", "-D", "2"}, []string{"broadcast has no device kernel"}},
		{AllReduce, []string{"-R", "2", "-D", "1", "-o", "prod"}, []string{"sums only", "-o prod", "use -o sum"}},
		{AllReduce, []string{"-R", "2", "-D", "1", "-o", "all"}, []string{"sums only"}},
		{AllReduce, []string{"-R", "2", "-D", "1", "-V", "0"}, []string{"invalid -V/--device_cta_count 0", "1 to 128"}},
		{AllReduce, []string{"-R", "2", "-D", "1", "-V", "129"}, []string{"invalid -V/--device_cta_count 129"}},
		{AllReduce, []string{"-R", "2", "-D", "1", "--algo", "Ring"}, []string{"choose nothing there"}},
		{AllReduce, []string{"-R", "2", "-D", "2", "--interleave"}, []string{"choose nothing there"}},
		{AllReduce, []string{"-R", "2", "-D", "1", "-g", "4", "--ranks-per-host", "2"}, []string{"one LSA team (one host)", "2 hosts"}},
		{AlltoAll, []string{"-R", "2", "-D", "2", "--np", "4", "--hosts", "2"}, []string{"one LSA team (one host)", "2 hosts"}},
		{AllReduce, []string{"--backend", "nccl", "-R", "2", "-D", "1"}, []string{"CUDA kernels gccl does not build", "embedded backend"}},
	} {
		t.Run(tc.tt.Collective+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			r := runPerf(t, tc.tt, append(tc.args, "-b", "8", "-e", "8")...)
			if r.code != exitInvalidUsage {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, exitInvalidUsage, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
		})
	}
}

// TestDeviceRecords: the records and nccl-tests' JSON say which kernel
// ran and with how many coops; -R 2 alone runs the stack's collective on
// symmetric windows, and says so.
func TestDeviceRecords(t *testing.T) {
	cleanBwEnv(t)
	dir := t.TempDir()
	out, js := filepath.Join(dir, "r.jsonl"), filepath.Join(dir, "r.json")
	r := runPerf(t, AllReduce, "-R", "2", "-D", "2", "-V", "5", "-g", "2", "-b", "64", "-e", "1K", "-f", "4", "-n", "1", "-w", "0", "--out", out, "-J", js)
	checkDevRows(t, AllReduce, r, "lsa-D2", 3)
	recs, err := results.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 {
		t.Fatalf("%d records, want 6", len(recs))
	}
	for _, rec := range recs {
		if rec.DeviceImpl != "lsa-D2" || rec.DeviceCTAs != 5 || rec.Register != 2 || rec.ChosenAlgo != "" {
			t.Errorf("record says device_impl %q, device_ctas %d, register %d, chosen_algo %q; want lsa-D2, 5, 2 and none", rec.DeviceImpl, rec.DeviceCTAs, rec.Register, rec.ChosenAlgo)
		}
		// -g 2: the driving goroutine and 2 ranks' workers share the
		// processors: a coop a rank while fewer than 5 are free each.
		want := min(5, max(1, (runtime.NumCPU()-1)/2))
		if rec.DeviceCoops < 1 || rec.DeviceCoops > want || rec.DeviceCoops != recs[0].DeviceCoops {
			t.Errorf("record says device_coops %d, want 1 to %d (the processors), the same in every record", rec.DeviceCoops, want)
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		GCCL results.NCCLRunConfig `json:"gccl_config"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.GCCL.DeviceImpl != "lsa-D2" || doc.GCCL.DeviceCTAs != 5 || doc.GCCL.DeviceCoops != recs[0].DeviceCoops {
		t.Errorf("-J's gccl_config: %+v (%v), want device_impl lsa-D2, device_ctas 5", doc.GCCL, err)
	}
	back, err := results.ReadFile(js)
	if err != nil || len(back) == 0 || back[0].DeviceImpl != "lsa-D2" {
		t.Errorf("-J read back: %v, %d records, want device_impl lsa-D2", err, len(back))
	}

	// -R 2 alone: the collective, on windows.
	r = runPerf(t, AllReduce, "-R", "2", "-g", "3", "-b", "8", "-e", "64K", "-f", "32", "-n", "1", "-w", "0", "--out", out, "--force")
	if r.code != 0 || !hasLine(r.stdout, "# Buffers: symmetric windows (-R 2: Comm.MemAlloc and WindowRegister on every rank)") || !hasLine(r.stdout, "# Out of bounds values : 0 OK") {
		t.Fatalf("-R 2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	recs, err = results.ReadFile(out)
	if err != nil || len(recs) == 0 || recs[0].DeviceImpl != "" || recs[0].Register != 2 || recs[0].ChosenAlgo == "" {
		t.Errorf("-R 2 records: %v, %+v; want register 2, no device_impl, the stack's choice", err, recs)
	}
}

// TestDeviceNP: -R 2 -D across processes of one host (MemAlloc's shared
// segments, mapped at WindowRegister; the barriers in a host segment),
// and -R 2 alone; every point checked, no segment left.
func TestDeviceNP(t *testing.T) {
	dir := t.TempDir()
	asChildren(t, dir)
	for _, tc := range []struct {
		tt           *Test
		args         []string
		ranks, procs int
	}{
		{AllReduce, []string{"--np", "2", "-R", "2", "-D", "2", "-V", "3", "-g", "2"}, 4, 2},
		{AllReduce, []string{"--np", "3", "-R", "2", "-D", "1", "-V", "2", "-d", "half"}, 3, 3},
		{AlltoAll, []string{"--np", "2", "-R", "2", "-D", "1", "-V", "2"}, 2, 2},
		{AlltoAll, []string{"--np", "3", "-R", "2", "-D", "2", "-V", "4", "-d", "int64"}, 3, 3},
		{AllReduce, []string{"--np", "2", "-R", "2"}, 2, 2},
		// GIN: across hosts (one rank a host; two of two), and one host.
		{AlltoAll, []string{"--np", "2", "--hosts", "2", "-R", "2", "-D", "3", "-V", "3"}, 2, 2},
		{AlltoAll, []string{"--np", "2", "--hosts", "2", "-g", "2", "-R", "2", "-D", "4", "-V", "1", "-d", "half"}, 4, 2},
		{AlltoAll, []string{"--np", "2", "--hosts", "2", "-g", "2", "-R", "2", "-D", "3", "-V", "2", "-d", "double"}, 4, 2},
		{AlltoAll, []string{"--np", "3", "--hosts", "3", "-R", "2", "-D", "4", "-V", "3", "-d", "int8"}, 3, 3},
		{AlltoAll, []string{"--np", "4", "--hosts", "2", "-R", "2", "-D", "4", "-V", "2", "-d", "int32"}, 4, 4},
		{AlltoAll, []string{"--np", "3", "-R", "2", "-D", "3", "-V", "1"}, 3, 3},
		{AlltoAll, []string{"--np", "3", "-R", "2", "-D", "4", "-V", "3", "-d", "float"}, 3, 3},
	} {
		t.Run(tc.tt.Collective+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := Main(tc.tt, append(tc.args, "-b", "8", "-e", "64K", "-f", "8", "-n", "2", "-w", "1"), &out, &errb); code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
			}
			checkJobTable(t, out.String(), tc.ranks, tc.procs)
		})
	}
	noSegmentsLeft(t, dir)
}

// The idle coops skip their barriers: allReduceIdle and alltoAllIdle say a
// coop is idle exactly when its share is empty on every rank, for counts
// around the cache line, every type size, rank count and coop count.
func TestIdleCoops(t *testing.T) {
	for _, dt := range []reduce.DataType{reduce.Int8, reduce.Float16, reduce.Float32, reduce.Float64} {
		for n := 1; n <= 5; n++ {
			for v := 1; v <= 17; v += 4 {
				for count := 0; count <= 300; count += 7 {
					l := &devLaunch{count: count, dt: dt, coops: v}
					for k := range v {
						busyAR, busyA2A := false, false
						var idleAR, idleA2A bool
						for rank := range n {
							c := &coop{k: k, l: l, r: &devRank{v: v, peerRecv: make([][]byte, n), d: &ccl.DevComm{LsaRank: rank}}}
							lo, hi := c.allReduceShare()
							busyAR = busyAR || lo < hi
							lo, hi = split(count, dt.Size(), k, v)
							busyA2A = busyA2A || lo < hi
							idleAR, idleA2A = allReduceIdle(c), alltoAllIdle(c)
						}
						if idleAR == busyAR || idleA2A == busyA2A {
							t.Fatalf("%v count %d, %d ranks, coop %d of %d: allReduceIdle %v (a share busy: %v), alltoAllIdle %v (busy: %v)",
								dt, count, n, k, v, idleAR, busyAR, idleA2A, busyA2A)
						}
					}
				}
			}
		}
	}
}

// agreeCoops gives every rank the least coops any rank can run, however
// the ranks' own counts differ, and refuses a count outside 1..-V.
func TestAgreeCoops(t *testing.T) {
	for _, tc := range []struct {
		can  []int
		v    int
		want int
		err  string
	}{
		{[]int{3, 1, 2}, 5, 1, ""},
		{[]int{4, 4, 7, 5, 6}, 7, 4, ""},
		{[]int{2}, 16, 2, ""},
		{[]int{5, 0}, 8, 0, "agreed on 0 coops: want 1 to 8"},
	} {
		t.Run(fmt.Sprint(tc.can), func(t *testing.T) {
			comms, err := Embedded{}.Init(len(tc.can), RunConfig{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				for _, c := range comms {
					c.Destroy()
				}
			})
			devs := make([]*devRank, len(comms))
			for i, c := range comms {
				devs[i] = &devRank{Comm: c, v: tc.v}
			}
			err = agreeCoops(devs, func(r *devRank) int { return tc.can[r.Rank()] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range devs {
				if r.v != tc.want {
					t.Errorf("rank %d runs %d coops, want %d", r.Rank(), r.v, tc.want)
				}
			}
		})
	}
}

// A launch ends at its release barrier's arrival (lsaCoop), so a rank's
// Synchronize must still wait there: after it returns, every peer's
// stores into the rank have landed, however late the peer. Rank 1 sleeps
// before its share; rank 0's Synchronize, called while rank 1 sleeps,
// must see rank 1's sums.
func TestDeviceSynchronizeWaitsForPeers(t *testing.T) {
	const count = 1024 // float32s: both ranks have a share
	comms, err := Embedded{}.Init(2, RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			c.Destroy()
		}
	}()
	syms, err := symmetricBuffers(comms, 4*count)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseSymmetric(syms, true)
	k := &devKernel{impl: "late-D2", reqs: lsaReqs, lsaWorld: true, coop: lsaCoop(nil, func(c *coop) {
		if c.r.d.Rank == 1 {
			time.Sleep(50 * time.Millisecond)
		}
		allReduceD2(c)
	}, allReduceIdle)}
	for _, inline := range []bool{false, true} {
		devs, err := newDevRanks(comms, syms, k, 1, inline)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range syms {
			f := unsafe.Slice((*float32)(unsafe.Pointer(&s.send[0])), count)
			for j := range f {
				f[j] = float32(i + 1)
			}
			clear(s.recv)
		}
		l := devLaunch{count: count, dt: reduce.Float32}
		errs := make([]error, 2)
		got := make([]float32, count) // rank 0's outputs as its Synchronize left them
		var wg sync.WaitGroup
		for i, r := range devs {
			wg.Add(1)
			go func() { // inline launches run on the caller: a goroutine a rank
				defer wg.Done()
				if errs[i] = r.launch(l); errs[i] == nil && i == 0 {
					if errs[i] = r.Synchronize(); errs[i] == nil {
						copy(got, unsafe.Slice((*float32)(unsafe.Pointer(&syms[0].recv[0])), count))
					}
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		for j, v := range got {
			if v != 3 {
				t.Fatalf("inline %v: rank 0's element %d is %v after its Synchronize, want 3 (rank 1's stores had not landed)", inline, j, v)
			}
		}
		if err := devs[1].Synchronize(); err != nil {
			t.Fatal(err)
		}
		closeDevRanks(devs)
	}
}

// coopsFor: one coop a coopWork of the bytes a launch moves (alltoall's
// count is per peer), at least one, at most -V; a pure function of the
// launch, so every rank runs the same coops.
func TestCoopsFor(t *testing.T) {
	ar, a2a := devKernels["allreduce"][2], devKernels["alltoall"][2]
	for _, tc := range []struct {
		k                       *devKernel
		count, size, n, v, want int
	}{
		{ar, 2, 4, 2, 16, 1},
		{ar, 0, 4, 2, 16, 1},
		{ar, coopWork / 4, 4, 8, 16, 1},
		{ar, coopWork/4 + 1, 4, 8, 16, 2},
		{ar, 1 << 20, 4, 2, 16, 16},
		{ar, 1 << 20, 4, 2, 3, 3},
		{a2a, coopWork / 8, 1, 8, 16, 1},
		{a2a, coopWork/8 + 1, 1, 8, 16, 2},
		{a2a, coopWork, 1, 8, 16, 8},
	} {
		if got := coopsFor(tc.k, tc.count, tc.size, tc.n, tc.v); got != tc.want {
			t.Errorf("%s count %d x %d B over %d ranks, -V %d: %d coops, want %d", tc.k.impl, tc.count, tc.size, tc.n, tc.v, got, tc.want)
		}
	}
}
