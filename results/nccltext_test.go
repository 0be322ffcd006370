package results

import (
	"strings"
	"testing"
)

func TestNCCLTextFixtures(t *testing.T) {
	type row struct {
		size, count   int64
		time, busbw   float64
		wrong         int64
		placement     string
		sourceLineNum string
	}
	tests := []struct {
		file        string
		n           int
		collective  string
		op          string
		first, last row
	}{
		{
			file: "testdata/h200x2_all_reduce_perf.txt", n: 28, collective: "allreduce", op: "sum",
			first: row{8, 2, 14.15, 0, 0, OutOfPlace, ":12"},
			last:  row{536870912, 134217728, 1724.34, 311.35, 0, InPlace, ":25"},
		},
		{
			file: "testdata/h200x2_all_reduce_simple.txt", n: 56, collective: "allreduce", op: "sum",
			first: row{8, 2, 17.17, 0, 0, OutOfPlace, ":12"},
			last:  row{1073741824, 268435456, 3307.84, 324.61, 0, InPlace, ":39"},
		},
		{
			file: "testdata/h200x2_sendrecv_perf.txt", n: 28, collective: "sendrecv", op: "none",
			first: row{8, 2, 13.90, 0, 0, OutOfPlace, ":12"},
			last:  row{536870912, 134217728, 1514.16, 354.57, -1, InPlace, ":25"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			recs, err := ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tt.n {
				t.Fatalf("got %d records, want %d", len(recs), tt.n)
			}
			for _, r := range recs {
				if r.NRanks != 2 || r.NProcs != 1 || r.NHosts != 1 || r.Host != "vm" {
					t.Errorf("topology %d ranks %d procs %d hosts %q, want 2 1 1 vm", r.NRanks, r.NProcs, r.NHosts, r.Host)
				}
				if r.Collective != tt.collective || r.Op != tt.op || r.Type != "float" || r.Root != -1 {
					t.Errorf("got %s %s %s root %d", r.Collective, r.Op, r.Type, r.Root)
				}
				if r.Backend != "nccl-tests" || r.Tool != "nccl-tests 2.19.6" || r.Schema != SchemaVersion {
					t.Errorf("provenance %q %q %d", r.Backend, r.Tool, r.Schema)
				}
				if r.Iterations != 20 || r.AggIters != 1 {
					t.Errorf("iterations %d agg %d, want 20 1", r.Iterations, r.AggIters)
				}
			}
			for _, c := range []struct {
				got  Record
				want row
			}{{recs[0], tt.first}, {recs[len(recs)-1], tt.last}} {
				g, w := c.got, c.want
				if g.Size != w.size || g.Count != w.count || g.TimeUs != w.time || g.BusBw != w.busbw ||
					g.AlgBw != w.busbw || g.Wrong != w.wrong || g.Placement != w.placement ||
					g.Source != tt.file+w.sourceLineNum {
					t.Errorf("got size %d count %d time %g busbw %g algbw %g wrong %d %s %s, want %+v",
						g.Size, g.Count, g.TimeUs, g.BusBw, g.AlgBw, g.Wrong, g.Placement, g.Source, w)
				}
			}
			// Out-of-place and in-place alternate.
			for i, r := range recs {
				want := OutOfPlace
				if i%2 == 1 {
					want = InPlace
				}
				if r.Placement != want {
					t.Fatalf("record %d placement %s, want %s", i, r.Placement, want)
				}
			}
		})
	}
}

func TestNCCLTextPerIterationColumns(t *testing.T) {
	recs, err := ReadFile("testdata/nccltests_periter_rs.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("got %d records, want 4", len(recs))
	}
	r := recs[0]
	if r.Collective != "reducescatter" || r.NRanks != 4 || r.NProcs != 4 || r.NHosts != 2 || r.Host != "nodeA" {
		t.Errorf("got %s ranks %d procs %d hosts %d host %s", r.Collective, r.NRanks, r.NProcs, r.NHosts, r.Host)
	}
	if r.TimeUs != 20.5 || r.MinUs != 19.8 || r.MaxUs != 22.1 || r.P99Us != 22.0 || r.Wrong != 0 {
		t.Errorf("out-of-place row 1: %+v", r)
	}
	if r := recs[1]; r.TimeUs != 21.0 || r.MinUs != 20.1 || r.BusBw != 0.04 {
		t.Errorf("in-place row 1: %+v", r)
	}
	if r := recs[2]; r.TimeUs != 1.2e4 || r.MinUs != 11000 || r.P99Us != 12900 {
		t.Errorf("exponent time: %+v", r)
	}
	if r := recs[3]; r.Wrong != -1 || r.TimeUs != 19.9 || r.MaxUs != 21 {
		t.Errorf("N/A wrong: %+v", r)
	}
}

func TestNCCLTextVariants(t *testing.T) {
	const header = "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809\n" +
		"# Collective test starting: all_gather_perf\n" +
		"# nThread 1 nGpus 4 minBytes 8 maxBytes 64 step: 8(factor) warmup iters: 1 iters: 5 agg iters: 2 validation: 1 graph: 0 unalign: 0\n"
	const row = "          32             2     float    none      -1    10.00    0.00    0.00       0     9.00    0.00    0.00       0\n"
	tests := []struct {
		name, file, text string
		n                int
		errAt            int // line of an expected syntax error; 0: none
		errText          string
		check            func(t *testing.T, recs []Record)
	}{
		{
			name: "no rank lines: nThread x nGpus", text: header + row, n: 2,
			check: func(t *testing.T, recs []Record) {
				if r := recs[0]; r.NRanks != 4 || r.NProcs != 0 || r.Collective != "allgather" || r.AggIters != 2 || r.Iterations != 5 {
					t.Errorf("%+v", r)
				}
			},
		},
		{
			name: "truncated row", text: header + row + "          64             4     float    none      -1    10.00    0.00\n", n: 2,
			errAt: 5, errText: "truncated",
		},
		{
			name: "malformed number", text: header + "          64             4     float    none      -1    1x.00    0.00    0.00       0     9.00    0.00    0.00       0\n" + row, n: 2,
			errAt: 4, errText: `"time"`,
		},
		{
			name: "foreign lines ignored", text: "vm:1:1 [0] NCCL INFO hello\n" + header + "rc=0\n" + row + "NCCL WARN 12 x\n", n: 2,
		},
		{
			name: "cputime and timestamp columns",
			text: header + "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  cputime   algbw   busbw  #wrong  timestamp\n" +
				"          32             2     float    none      -1    10.00    0.00    0.00       0     9.00    0.00    0.00       0  2025-06-01 10:20:30\n",
			n: 2,
			check: func(t *testing.T, recs []Record) {
				if recs[1].TimeUs != 9 {
					t.Errorf("in-place time %g", recs[1].TimeUs)
				}
			},
		},
		{
			name: "two tests concatenated", n: 4,
			text: header + row + "# Collective test starting: broadcast_perf\n" +
				"# nThread 1 nGpus 2 minBytes 8 maxBytes 64 step: 8(factor) warmup iters: 1 iters: 7 agg iters: 1 validation: 1 graph: 0 unalign: 0\n" +
				"          32             8     float    none       0    10.00    0.00    0.00       0     9.00    0.00    0.00       0\n",
			check: func(t *testing.T, recs []Record) {
				if r := recs[2]; r.Collective != "broadcast" || r.Root != 0 || r.NRanks != 2 || r.Iterations != 7 {
					t.Errorf("%+v", r)
				}
			},
		},
		{
			name: "old log: collective from file name", file: "logs/dgx_alltoall_perf.log",
			text: "# nThread 1 nGpus 8 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n" + row, n: 2,
			check: func(t *testing.T, recs []Record) {
				if r := recs[0]; r.Collective != "alltoall" || r.NRanks != 8 || r.Tool != "nccl-tests" {
					t.Errorf("%+v", r)
				}
			},
		},
		{
			name: "old log: collective unknown", file: "run.log",
			text:  "# nThread 1 nGpus 8 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n" + row,
			errAt: 2, errText: "cannot tell which collective",
		},
		{
			name: "test this package does not know", n: 2,
			text: strings.Replace(header, "all_gather_perf", "bisection_perf", 1) + row,
			check: func(t *testing.T, recs []Record) {
				if r := recs[0]; r.Collective != "bisection" || r.Op != "none" {
					t.Errorf("%+v", r)
				}
			},
		},
		{
			name: "header without rows", text: header, errText: "no result rows",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = "log.txt"
			}
			recs, err := Read(file, strings.NewReader(tt.text))
			if len(recs) != tt.n {
				t.Errorf("got %d records, want %d (err %v)", len(recs), tt.n, err)
			}
			switch {
			case tt.errText == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.errText != "":
				wantErr(t, err, tt.errText)
				if tt.errAt > 0 {
					wantSyntax(t, err, file, tt.errAt)
				}
			}
			if tt.check != nil && len(recs) == tt.n {
				tt.check(t, recs)
			}
		})
	}
}

func TestTestNames(t *testing.T) {
	tests := []struct {
		name        string
		requirePerf bool
		coll        string // "" when not found
		reduces     bool
	}{
		{"all_reduce_perf", false, "allreduce", true},
		{"/opt/nccl-tests/build/all_gather_perf_mpi", true, "allgather", false},
		{"reduce_scatter_perf", true, "reducescatter", true},
		{"AllReduce", false, "allreduce", true},
		{"AlltoAll", false, "alltoall", false},
		{"SendRecv", false, "sendrecv", false},
		{"HyperCube", false, "hypercube", false},
		{"reduce_perf", true, "reduce", true},
		{"gather_perf", true, "gather", false},
		{"scatter_perf", true, "scatter", false},
		{"broadcast_perf.exe", true, "broadcast", false},
		{"alltoallv_perf", true, "alltoallv", false},
		{"AlltoAllv", false, "alltoallv", false},
		{"bisection_perf", true, "bisection", true},
		{"my_bench", true, "", false},
		{"", false, "", false},
	}
	for _, tt := range tests {
		got, ok := testOrUnknown(tt.name, tt.requirePerf)
		if ok != (tt.coll != "") || got.collective != tt.coll || (ok && got.reduces != tt.reduces) {
			t.Errorf("testOrUnknown(%q) = %+v, %v; want %q reduces %v", tt.name, got, ok, tt.coll, tt.reduces)
		}
	}
	for file, want := range map[string]string{
		"h200x2_all_reduce_simple.txt": "allreduce",
		"logs/reduce_scatter.log":      "reducescatter",
		"x_all_gather.txt":             "allgather",
		"h200_alltoallv_perf.txt":      "alltoallv",
		"h200_alltoall_perf.txt":       "alltoall",
		"nothing.txt":                  "",
	} {
		got, _ := testInText(file)
		if got.collective != want {
			t.Errorf("testInText(%q) = %q, want %q", file, got.collective, want)
		}
	}
}
