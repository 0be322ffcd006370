package perf

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/reduce"
)

// cleanAlltoAllvEnv clears the caller's alltoallv pattern, so each test
// sets the one it means.
func cleanAlltoAllvEnv(t *testing.T) {
	t.Helper()
	cleanBwEnv(t)
	for _, k := range []string{envSpread, envMatrix, envScale, envSummary} {
		unsetenv(t, k)
	}
}

// TestAlltoAllvCounts: the size and count columns and algBw, worked out by
// hand from nccl-tests' alltoallv.cu (per-peer count rounded down to 16
// bytes; per-peer bytes (1-s)*T/n + s*d*T/(n(n-1)/2), rounded down to 16,
// d = (j-i) mod n; the row is one rank's total; algBw counts it).
func TestAlltoAllvCounts(t *testing.T) {
	for _, c := range []struct {
		n, elt int
		size   int64
		spread float64
		param  int
		row    int64
		why    string
	}{
		{4, 4, 1024, 1, 64, 1008, "peers get 160, 336, 512; itself nothing"},
		{4, 1, 128, 1, 32, 112, "16, 32, 64"},
		{4, 8, 1024, 1, 32, 1008, "doubles round the per-peer count to 2"},
		{4, 4, 1024, 0, 64, 1024, "uniform: 256 to every rank, itself too"},
		{4, 4, 1024, 0.5, 64, 1008, "half way: 128, 208, 288, 384"},
		{1, 4, 100, 1, 24, 96, "one rank sends itself everything, 16-aligned"},
		{3, 1, 4096, 1, 1360, 4080, "1365 rounded to 16 elements"},
		{5, 1, 100, 1, 16, 64, "80 B: 0, 16, 16, 32"},
		{5, 2, 8, 1, 0, 0, "below 16 B per peer: nothing"},
		{2, 4, 64, 1, 8, 64, "two ranks: all to the other"},
	} {
		tr := &traffic{spread: c.spread}
		test := newAlltoAllv(tr)
		param, row := test.Counts(c.size, c.elt, c.n)
		if param != c.param || row != c.row {
			t.Errorf("n=%d elt=%d size=%d spread=%g (%s): param %d row %d, want %d %d",
				c.n, c.elt, c.size, c.spread, c.why, param, row, c.param, c.row)
			continue
		}
		alg, bus := test.BusBw(param, c.elt, c.n, 1e-6)
		wantAlg := float64(c.row) / 1e-6 / 1e9
		if !closeTo(alg, wantAlg) || !closeTo(bus, wantAlg*float64(c.n-1)/float64(c.n)) {
			t.Errorf("n=%d size=%d: algBw %g busBw %g, want %g and (n-1)/n of it", c.n, c.size, alg, bus, wantAlg)
		}
	}
}

// TestAlltoAllvPatternProperties: for every rank count, size and spread,
// every amount is 16-aligned, every rank sends and receives the same total,
// which never exceeds the size asked for, and spread 1 sends itself nothing.
func TestAlltoAllvPatternProperties(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for _, spread := range []float64{0, 0.25, 0.5, 1} {
			tr := &traffic{spread: spread}
			for _, size := range []int64{0, 16, 100, 1000, 4096, 1<<20 + 48} {
				param, row := tr.counts(size, 1, n)
				total := int64(param * n)
				for i := 0; i < n; i++ {
					var sent, got int64
					for j := 0; j < n; j++ {
						b := tr.peerBytes(i, j, n, total)
						if b%16 != 0 || b < 0 {
							t.Fatalf("n=%d spread=%g size=%d: %d -> %d gets %d bytes", n, spread, size, i, j, b)
						}
						if spread == 1 && n > 1 && i == j && b != 0 {
							t.Errorf("n=%d: rank %d sends itself %d bytes at spread 1", n, i, b)
						}
						sent += b
						got += tr.peerBytes(j, i, n, total)
					}
					if sent != row || got != row || row > size {
						t.Errorf("n=%d spread=%g size=%d: rank %d sends %d, receives %d, row %d", n, spread, size, i, sent, got, row)
					}
				}
			}
		}
	}
}

// TestAlltoAllvWantIsTheExchange: the expected output is what a plain
// exchange of the filled send buffers delivers (a dumb reference: cut
// each sender's buffer in peer order, concatenate by sender), for uneven
// matrices, generated patterns and every type.
func TestAlltoAllvWantIsTheExchange(t *testing.T) {
	patterns := map[string]*traffic{
		"spread1":   {spread: 1},
		"spread0.3": {spread: 0.3},
		"matrix": {matrix: [][]int64{
			{0, 32, 16},
			{48, 16, 0},
			{16, 0, 64},
		}},
	}
	for name, tr := range patterns {
		for _, dt := range reduce.AllDataTypes() {
			for n := 1; n <= 5; n++ {
				if tr.matrix != nil && n != len(tr.matrix) {
					continue
				}
				param, _ := tr.counts(1000, dt.Size(), n)
				elt := dt.Size()
				total := int64(param * n * elt)
				sendLen, recvLen := tr.bufBytes(param, elt, n)
				sends := make([][]byte, n)
				for r := range sends {
					sends[r] = make([]byte, sendLen)
					tr.fill(dataArgs{dt: dt, seed: 7, rank: r, n: n, count: param}, sends[r])
				}
				for dst := 0; dst < n; dst++ {
					var got []byte
					for src := 0; src < n; src++ {
						var off int64
						for k := 0; k < dst; k++ {
							off += tr.peerBytes(src, k, n, total)
						}
						got = append(got, sends[src][off:off+tr.peerBytes(src, dst, n, total)]...)
					}
					got = append(got, bytes.Repeat([]byte{poison}, recvLen-len(got))...)
					want := tr.want(dataArgs{dt: dt, seed: 7, rank: dst, n: n, count: param})
					if !bytes.Equal(got, want) {
						t.Errorf("%s %v n=%d rank %d: expected output differs from the exchange", name, dt, n, dst)
					}
				}
			}
		}
	}
}

// checkAlltoAllvRows checks a run's rows: exit 0, #wrong 0 out of place,
// N/A in place, and the size and count columns of pattern tr.
func checkAlltoAllvRows(t *testing.T, r result, tr *traffic, n int, dt reduce.DataType, sizes []int64) {
	t.Helper()
	rows := checkRun(t, AlltoAllv, r, 1, n)
	if len(rows) != len(sizes) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(sizes), r.stdout)
	}
	for i, row := range rows {
		f := strings.Fields(row)
		param, bytes := tr.counts(sizes[i], dt.Size(), n)
		want := []string{strconv.FormatInt(bytes, 10), strconv.Itoa(param), dt.String(), "none", "-1"}
		if strings.Join(f[:5], " ") != strings.Join(want, " ") || f[8] != "0" || f[12] != "N/A" {
			t.Errorf("row %q: want it to start %q, #wrong 0 and N/A", row, want)
		}
	}
}

// TestAlltoAllvRuns: the stack delivers every segment bit-exactly on 1 to
// 5 ranks, for several types and patterns (sizes 8 B to 32 KiB).
func TestAlltoAllvRuns(t *testing.T) {
	cleanAlltoAllvEnv(t)
	sizes := []int64{8, 64, 512, 4096, 32768}
	types := []string{"int8", "half", "float", "double", "bfloat16", "uint64"}
	if testing.Short() {
		types = []string{"int8", "double"}
	}
	for _, spread := range []string{"", "0", "0.5"} {
		t.Setenv(envSpread, spread)
		tr := &traffic{spread: 1}
		if spread != "" {
			tr.spread, _ = strconv.ParseFloat(spread, 64)
		}
		for n := 1; n <= 5; n++ {
			for _, d := range types {
				dt, _ := reduce.ParseDataType(d)
				t.Run(fmt.Sprintf("spread=%s/n=%d/%s", spread, n, d), func(t *testing.T) {
					r := runPerf(t, AlltoAllv, args(tiny, []string{"-g", strconv.Itoa(n), "-d", d})...)
					checkAlltoAllvRows(t, r, tr, n, dt, sizes)
				})
			}
		}
	}
	// Threads, -m aggregation, unaligned buffers, --check-timed and -K.
	t.Setenv(envSpread, "")
	for _, extra := range [][]string{{"-t", "3", "-g", "1"}, {"-g", "3", "-m", "2"}, {"-g", "3", "-u", "1"}, {"-g", "4", "--check-timed"}, {"-g", "3", "-K", "1"}} {
		r := runPerf(t, AlltoAllv, args(tiny, extra)...)
		if r.code != 0 || !hasLine(r.stdout, "# Out of bounds values : 0 OK") {
			t.Errorf("%v: exit %d\n%s%s", extra, r.code, r.stdout, r.stderr)
		}
	}
}

// writeMatrix writes a traffic matrix file and returns its path.
func writeMatrix(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traffic.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAlltoAllvMatrix: a traffic matrix larger than the ranks, with cells
// that are not 16-aligned and uneven totals: rank 2 receives the most
// (sizes column), the others less (their tails must stay untouched).
func TestAlltoAllvMatrix(t *testing.T) {
	cleanAlltoAllvEnv(t)
	t.Setenv(envMatrix, writeMatrix(t, "0 100 200 7\n\n  50 20 300 7\r\n10 0 40 7\n7 7 7 7\n"))
	t.Setenv(envScale, "2")
	tr := &traffic{matrix: [][]int64{{0, 192, 400}, {96, 32, 592}, {16, 0, 80}}}
	for _, d := range []string{"int8", "float", "double"} {
		dt, _ := reduce.ParseDataType(d)
		r := runPerf(t, AlltoAllv, "-g", "3", "-b", "2K", "-e", "2K", "-n", "2", "-w", "1", "-d", d)
		checkAlltoAllvRows(t, r, tr, 3, dt, []int64{2048})
		if f := strings.Fields(dataRows(r.stdout)[0]); f[0] != "1072" || f[1] != "0" {
			t.Errorf("%s: size %s count %s, want 1072 (rank 2 receives 400+592+80) and 0", d, f[0], f[1])
		}
	}
}

// alltoallvCorrupt is the embedded stack whose ranks flip the last byte
// of the last segment they received, after it arrived; with past, the
// byte just after it instead (a stack writing past a segment).
type alltoallvCorrupt struct {
	Embedded
	past bool
}

func (b alltoallvCorrupt) Init(n int, rc RunConfig) ([]Comm, error) {
	comms, err := b.Embedded.Init(n, rc)
	for i, c := range comms {
		comms[i] = &lastRecvFlipper{Comm: c, past: b.past}
	}
	return comms, err
}

type lastRecvFlipper struct {
	Comm
	past bool
	last []byte
}

func (c *lastRecvFlipper) Recv(buf []byte, count int, dt reduce.DataType, peer int) error {
	n := count * dt.Size()
	if c.past && n < cap(buf) {
		n++ // the capacity runs on to the end of the allocation
	}
	c.last = buf[:n]
	return c.Comm.Recv(buf, count, dt, peer)
}

func (c *lastRecvFlipper) Synchronize() error {
	err := c.Comm.Synchronize()
	if err == nil && len(c.last) > 0 {
		c.last[len(c.last)-1] ^= 0x10
	}
	return err
}

// TestAlltoAllvCatchesCorruption: one flipped byte per rank, in the last
// segment, is counted: one wrong element per rank, exit 7.
func TestAlltoAllvCatchesCorruption(t *testing.T) {
	cleanAlltoAllvEnv(t)
	r := runWith(t, AlltoAllv, alltoallvCorrupt{}, "-g", "3", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0", "-d", "float")
	if r.code != exitDataError || !hasLine(r.stdout, "# Out of bounds values : 3 FAILED") {
		t.Errorf("exit %d, want %d and 3 wrong elements:\n%s%s", r.code, exitDataError, r.stdout, r.stderr)
	}
}

// TestAlltoAllvChecksTails: with a matrix, a rank that receives less than
// the busiest must find the rest of its buffer untouched: a byte written
// just past the last segment counts on ranks 0 and 1 (rank 2's buffer ends
// with its segment, as in nccl-tests).
func TestAlltoAllvChecksTails(t *testing.T) {
	cleanAlltoAllvEnv(t)
	t.Setenv(envMatrix, writeMatrix(t, "0 192 400\n96 32 592\n16 0 80\n"))
	r := runWith(t, AlltoAllv, alltoallvCorrupt{past: true}, "-g", "3", "-b", "2K", "-e", "2K", "-n", "1", "-w", "0", "-d", "int8")
	if r.code != exitDataError || !hasLine(r.stdout, "# Out of bounds values : 2 FAILED") {
		t.Errorf("exit %d, want %d and 2 wrong elements:\n%s%s", r.code, exitDataError, r.stdout, r.stderr)
	}
}

// TestAlltoAllvEnvErrors: bad patterns are usage errors (exit 6) that name
// the variable or file, the problem and what is valid; nothing runs.
func TestAlltoAllvEnvErrors(t *testing.T) {
	cleanAlltoAllvEnv(t)
	square := writeMatrix(t, "0 16\n16 0\n")
	for _, c := range []struct {
		env   map[string]string
		args  []string
		wants []string
	}{
		{map[string]string{envSpread: "abc"}, nil, []string{envSpread, `"abc"`, "from 0 (uniform) to 1"}},
		{map[string]string{envSpread: "1.5"}, nil, []string{envSpread, "1.5"}},
		{map[string]string{envSpread: "NaN"}, nil, []string{envSpread}},
		{map[string]string{envMatrix: square, envScale: "-1"}, nil, []string{envScale, "number >= 0"}},
		{map[string]string{envMatrix: filepath.Join(t.TempDir(), "none.txt")}, nil, []string{envMatrix, "no such file"}},
		{map[string]string{envMatrix: writeMatrix(t, "1 2\n3\n")}, nil, []string{"line 2 has 1 values, the first row 2"}},
		{map[string]string{envMatrix: writeMatrix(t, "1 2\n3 4\n5 6\n")}, nil, []string{"3 rows of 2 values", "square"}},
		{map[string]string{envMatrix: writeMatrix(t, "1 -2\n3 4\n")}, nil, []string{"line 1 column 2", `"-2"`, ">= 0"}},
		{map[string]string{envMatrix: writeMatrix(t, "1 x\n3 4\n")}, nil, []string{"line 1 column 2", `"x"`}},
		{map[string]string{envMatrix: writeMatrix(t, "1 inf\n3 4\n")}, nil, []string{"too large"}},
		{map[string]string{envMatrix: writeMatrix(t, " \n\n")}, nil, []string{"no values"}},
		{map[string]string{envMatrix: square}, []string{"-g", "3"}, []string{"2x2 matrix cannot describe 3 ranks"}},
		{map[string]string{envMatrix: square}, []string{"-b", "8", "-e", "64"}, []string{"-b and -e must be equal"}},
		{map[string]string{envMatrix: square}, []string{"-b", "8", "-e", "8"}, []string{"-e must be at least 16 bytes"}},
	} {
		for k := range c.env {
			t.Setenv(k, c.env[k])
		}
		// c.args come last: a repeated flag takes its last value.
		a := args([]string{"-g", "2", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0"}, c.args)
		r := runPerf(t, AlltoAllv, a...)
		if r.code != exitInvalidUsage || dataRows(r.stdout) != nil {
			t.Errorf("%v %v: exit %d, want %d and no rows\n%s", c.env, a, r.code, exitInvalidUsage, r.stdout)
		}
		for _, w := range c.wants {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v %v: stderr %q lacks %q", c.env, a, r.stderr, w)
			}
		}
		for k := range c.env {
			os.Unsetenv(k)
		}
	}
}

// TestAlltoAllvSummaryNote: the per-rank summary nccl-tests prints is not
// implemented, and the header says so rather than dropping it silently.
func TestAlltoAllvSummaryNote(t *testing.T) {
	cleanAlltoAllvEnv(t)
	t.Setenv(envSummary, "1")
	r := runPerf(t, AlltoAllv, args(tiny, []string{"-g", "2"})...)
	checkRun(t, AlltoAllv, r, 1, 2)
	if !hasLine(r.stdout, "# Note: "+envSummary+" ignored: the per-rank summary is not implemented") {
		t.Errorf("no note:\n%s", r.stdout)
	}
}

// TestTrafficMatrixScale: scaling happens before the 16-byte rounding.
func TestTrafficMatrixScale(t *testing.T) {
	m, err := parseTrafficMatrix(strings.NewReader("15 16\n17.9 1e3\n"), 1.5)
	if err != nil {
		t.Fatal(err)
	}
	// 22.5 -> 16, 24 -> 16, 26.85 -> 16, 1500 -> 1488
	if fmt.Sprint(m) != "[[16 16] [16 1488]]" {
		t.Errorf("got %v", m)
	}
	if _, err := parseTrafficMatrix(strings.NewReader("1\n"), math.Inf(1)); err == nil {
		t.Errorf("an infinite scale passed")
	}
}
