package perf

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/tuning"
)

// TestFlagsAccepted sets every flag, once in its short and once in its long
// form, and checks the field it lands in.
func TestFlagsAccepted(t *testing.T) {
	type flag struct {
		short, long, value string
		check              func(o *Options) bool
	}
	flags := []flag{
		{"-t", "--nthreads", "2", func(o *Options) bool { return o.Threads == 2 }},
		{"-g", "--ngpus", "3", func(o *Options) bool { return o.RanksPerThread == 3 }},
		{"-b", "--minbytes", "1.5K", func(o *Options) bool { return o.MinBytes == 1536 }},
		{"-e", "--maxbytes", "2M", func(o *Options) bool { return o.MaxBytes == 2<<20 }},
		{"-i", "--stepbytes", "4K", func(o *Options) bool { return o.StepBytes == 4096 }},
		{"-f", "--stepfactor", "4", func(o *Options) bool { return o.StepFactor == 4 }},
		{"-n", "--iters", "7", func(o *Options) bool { return o.Iters == 7 }},
		{"-w", "--warmup_iters", "3", func(o *Options) bool { return o.Warmup == 3 }},
		{"-m", "--agg_iters", "2", func(o *Options) bool { return o.AggIters == 2 }},
		{"-N", "--run_cycles", "2", func(o *Options) bool { return o.Cycles == 2 }},
		{"-p", "--parallel_init", "1", func(o *Options) bool { return o.ParallelInit == 1 && hasNote(o, "-p/--parallel_init") }},
		{"-c", "--check", "2", func(o *Options) bool { return o.Check == 2 }},
		{"-o", "--op", "max", func(o *Options) bool { return reflect.DeepEqual(o.Ops, []reduce.Op{reduce.Max}) }},
		{"-d", "--datatype", "double", func(o *Options) bool { return reflect.DeepEqual(o.Types, []reduce.DataType{reduce.Float64}) }},
		{"-r", "--root", "1", func(o *Options) bool { return o.rootSpec == "1" }},
		{"-z", "--blocking", "1", func(o *Options) bool { return o.Blocking == 1 }},
		{"-y", "--stream_null", "1", func(o *Options) bool { return o.StreamNull == 1 && hasNote(o, "-y/--stream_null") }},
		{"-T", "--timeout", "5", func(o *Options) bool { return o.Timeout == 5 && o.timeout().Seconds() == 5 }},
		{"-a", "--average", "2", func(o *Options) bool { return o.Average == 2 }},
		{"-I", "--per_iter_timing", "1", func(o *Options) bool { return o.PerIter == 1 }},
		{"-K", "--bitwise", "2", func(o *Options) bool { return o.Bitwise == 2 }},
		{"-S", "--report_timestamps", "1", func(o *Options) bool { return o.Timestamps == 1 }},
		{"-J", "--output_file", "x.json", func(o *Options) bool { return o.JSONFile == "x.json" }},
		{"-u", "--unalign", "1", func(o *Options) bool { return o.Unalign == 1 }},
		{"-M", "--memory_report", "1", func(o *Options) bool { return o.MemReport == 1 }},
		{"-C", "--report_cputime", "1", func(o *Options) bool { return o.CPUTime == 1 }},
		{"-G", "--cudagraph", "0", func(o *Options) bool { return o.Graph == 0 }},
		{"-R", "--local_register", "1", func(o *Options) bool { return o.Register == 1 && hasNote(o, "-R/--local_register") }},
		{"-D", "--device_implementation", "0", func(o *Options) bool { return o.DeviceImpl == 0 }},
		{"-V", "--device_cta_count", "4", func(o *Options) bool { return o.DeviceCTAs == 4 && hasNote(o, "-V/--device_cta_count") }},
		{"-x", "--cta_policy", "1", func(o *Options) bool { return o.CTAPolicy == 1 && hasNote(o, "-x/--cta_policy") }},
		{"", "--proto", "ll128,simple", func(o *Options) bool { return reflect.DeepEqual(o.Protos, []proto.Protocol{proto.LL128, proto.Simple}) }},
		{"", "--algo", "ring", func(o *Options) bool { return reflect.DeepEqual(o.Algos, []tuning.Algo{tuning.Ring}) }},
		{"", "--nchannels", "1,4,64", func(o *Options) bool { return reflect.DeepEqual(o.Channels, []int{1, 4, 64}) }},
		{"", "--buffsize", "1M,512K", func(o *Options) bool { return reflect.DeepEqual(o.BuffSizes, []int64{1 << 20, 512 << 10}) }},
		{"", "--out", "r.jsonl", func(o *Options) bool { return o.Out == "r.jsonl" }},
		{"", "--csv", "r.csv", func(o *Options) bool { return o.CSV == "r.csv" }},
		{"", "--check-timed", "", func(o *Options) bool { return o.CheckTimed }},
		{"", "--force", "", func(o *Options) bool { return o.Force }},
		{"", "--backend", "embedded", func(o *Options) bool { return o.Backend == "embedded" }},
	}
	for _, f := range flags {
		var forms [][]string
		if f.short != "" {
			forms = append(forms, []string{f.short, f.value}, []string{f.short + f.value})
		}
		if f.value == "" {
			forms = append(forms, []string{f.long})
		} else {
			forms = append(forms, []string{f.long, f.value}, []string{f.long + "=" + f.value})
		}
		for _, form := range forms {
			// -b/-e are validated together: keep min <= max.
			base := []string{"-b", "8", "-e", "1G"}
			switch f.short {
			case "-b":
				base = []string{"-e", "1G"}
			case "-e":
				base = []string{"-b", "8"}
			}
			var errb bytes.Buffer
			o, err := parseOptions("all_reduce_perf", append(base, form...), &errb)
			if err != nil {
				t.Errorf("%q: %v (stderr %q)", form, err, errb.String())
				continue
			}
			if !f.check(o) {
				t.Errorf("%q: not applied: %+v", form, *o)
			}
		}
	}
}

func hasNote(o *Options, prefix string) bool {
	for _, n := range o.notes {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// TestDefaults: nccl-tests' defaults.
func TestDefaults(t *testing.T) {
	o, err := parseOptions("all_reduce_perf", nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		Threads: 1, RanksPerThread: 1, MinBytes: 32 << 20, MaxBytes: 32 << 20, StepBytes: 1 << 20, StepFactor: 1,
		Iters: 20, AggIters: 1, Warmup: 5, Cycles: 1, Check: 1, Average: 1, DeviceCTAs: 16, CTAPolicy: -1,
		Ops: []reduce.Op{reduce.Sum}, Types: []reduce.DataType{reduce.Float32}, rootSpec: "0", Backend: "embedded",
		MaxTime: 2 * time.Second, BindTo: "core",
	}
	got := *o
	got.args = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}
	if len(o.configs()) != 1 || o.configs()[0].Label() != "proto=auto algo=auto nchannels=auto buffsize=default" {
		t.Errorf("default configs %+v", o.configs())
	}
}

// TestAllTypesAllOps: -d all -o all is every type and every op.
func TestAllTypesAllOps(t *testing.T) {
	o, err := parseOptions("all_reduce_perf", []string{"-d", "all", "-o", "all"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Types) != 10 || len(o.Ops) != 6 {
		t.Fatalf("-d all -o all: %d types, %d ops; want 10 and 6", len(o.Types), len(o.Ops))
	}
	// Aliases and lists.
	o, err = parseOptions("all_reduce_perf", []string{"-d", "fp16,bf16,int", "-o", "premulsum,mulsum,AVG"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.Types, []reduce.DataType{reduce.Float16, reduce.Bfloat16, reduce.Int32}) ||
		!reflect.DeepEqual(o.Ops, []reduce.Op{reduce.PreMulSum, reduce.PreMulSum, reduce.Avg}) {
		t.Errorf("aliases: types %v ops %v", o.Types, o.Ops)
	}
}

// TestAllTypesAllOpsRun runs allreduce over every (type, op): 60 rows, each
// pair once, with nccl-tests' names, all correct.
func TestAllTypesAllOpsRun(t *testing.T) {
	cleanBwEnv(t)
	r := runPerf(t, AllReduce, "-d", "all", "-o", "all", "-b", "64", "-e", "64", "-g", "2", "-n", "1", "-w", "0")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rows := dataRows(r.stdout)
	if len(rows) != 60 {
		t.Fatalf("%d rows, want 60", len(rows))
	}
	types := []string{"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16"}
	ops := []string{"sum", "prod", "max", "min", "avg", "mulsum"}
	seen := map[string]bool{}
	for i, row := range rows {
		f := strings.Fields(row)
		want := types[i/6] + "/" + ops[i%6]
		if got := f[2] + "/" + f[3]; got != want {
			t.Errorf("row %d is %s, want %s (types outer, ops inner)", i, got, want)
		}
		seen[f[2]+"/"+f[3]] = true
		if f[8] != "0" || f[12] != "0" {
			t.Errorf("%s/%s: #wrong %s %s", f[2], f[3], f[8], f[12])
		}
	}
	if len(seen) != 60 {
		t.Errorf("%d distinct (type, op) pairs, want 60", len(seen))
	}
}

// TestRootSweep: -r -1 and -r all run every root; the root column says which.
func TestRootSweep(t *testing.T) {
	cleanBwEnv(t)
	for _, tt := range []*Test{Broadcast, Reduce, Gather, Scatter} {
		for _, spec := range [][]string{{"-r", "-1"}, {"-r", "all"}, {"--root=-1"}, {"--root", "ALL"}} {
			r := runPerf(t, tt, args([]string{"-g", "3", "-b", "96", "-e", "192", "-f", "2", "-n", "1", "-w", "0"}, spec)...)
			if r.code != 0 {
				t.Fatalf("%v %q: exit %d\n%s", tt, spec, r.code, r.stderr)
			}
			var roots []string
			for _, row := range dataRows(r.stdout) {
				f := strings.Fields(row)
				roots = append(roots, f[0]+"@"+f[4])
				if f[8] != "0" || f[12] != "0" {
					t.Errorf("%v %q: wrong elements in %q", tt, spec, row)
				}
			}
			if got := strings.Join(roots, " "); got != "96@0 192@0 96@1 192@1 96@2 192@2" {
				t.Errorf("%v %q: rows (size@root) %s; want every size for root 0, then 1, then 2", tt, spec, got)
			}
		}
	}
	// A single root is used as given; a non-rooted test prints -1 and ignores -r.
	r := runPerf(t, Scatter, "-g", "3", "-r", "2", "-b", "96", "-e", "96", "-n", "1", "-w", "0")
	if rows := dataRows(r.stdout); r.code != 0 || len(rows) != 1 || strings.Fields(rows[0])[4] != "2" {
		t.Errorf("-r 2: exit %d rows %q", r.code, rows)
	}
	r = runPerf(t, AllReduce, "-g", "3", "-r", "2", "-b", "96", "-e", "96", "-n", "1", "-w", "0")
	if rows := dataRows(r.stdout); r.code != 0 || len(rows) != 1 || strings.Fields(rows[0])[4] != "-1" {
		t.Errorf("allreduce -r 2: exit %d rows %q", r.code, rows)
	}
}

// TestUsageErrors: every bad command line exits 6 before printing anything
// on stdout, with a message that names the flag and what is valid.
func TestUsageErrors(t *testing.T) {
	cleanBwEnv(t)
	cases := []struct {
		test *Test
		args []string
		want []string // substrings of stderr
	}{
		{AllReduce, []string{"-d", "foo"}, []string{"-d/--datatype", `"foo"`, "int8", "bfloat16", "all"}},
		{AllReduce, []string{"-d", "float,foo"}, []string{"-d/--datatype", `"foo"`}},
		{AllReduce, []string{"-o", "foo"}, []string{"-o/--op", `"foo"`, "sum", "mulsum", "all"}},
		{AllReduce, []string{"-b", "12Q"}, []string{"'minbytes'", `"12Q"`, "K, M or G"}},
		{AllReduce, []string{"-e", "abc"}, []string{"'maxbytes'", `"abc"`, "K, M or G"}},
		{AllReduce, []string{"-b", "NaN"}, []string{"'minbytes'", `"NaN"`}},
		{AllReduce, []string{"-e", "-1"}, []string{"'maxbytes'", `"-1"`}},
		{AllReduce, []string{"-i", "1X"}, []string{"'stepbytes'", `"1X"`}},
		{AllReduce, []string{"-b", "1M", "-e", "1K"}, []string{"'minbytes' and 'maxbytes'", "1048576 > 1024"}},
		{AllReduce, []string{"-a", "4"}, []string{"-a/--average", "0 (rank 0), 1 (mean), 2 (min) or 3 (max)"}},
		{AllReduce, []string{"-a", "-1"}, []string{"-a/--average"}},
		{AllReduce, []string{"--proto", "XYZ"}, []string{"--proto", `"XYZ"`, "LL, LL128, Simple"}},
		{AllReduce, []string{"--algo", "Foo"}, []string{"--algo", `"Foo"`, "Ring", "Tree"}},
		{AllGather, []string{"--algo", "Tree"}, []string{"--algo Tree", "allgather has no Tree", "Ring"}},
		{Broadcast, []string{"--algo", "TwoShot"}, []string{"--algo TwoShot", "broadcast has no TwoShot", "Ring, OneShot"}},
		{AllReduce, []string{"--configs", "TwoShot/LL128/1"}, []string{"TwoShot runs on LL only"}},
		{AllReduce, []string{"--ranks-per-host", "-1"}, []string{"--ranks-per-host", "-1"}},
		{AllReduce, []string{"--nchannels", "0"}, []string{"--nchannels", `"0"`, "from 1 to 64"}},
		{AllReduce, []string{"--nchannels", "65"}, []string{"--nchannels", `"65"`, "from 1 to 64"}},
		{AllReduce, []string{"--nchannels", "1,x"}, []string{"--nchannels", `"x"`}},
		{AllReduce, []string{"--buffsize", "0"}, []string{"--buffsize", `"0"`}},
		{AllReduce, []string{"--buffsize", "3"}, []string{"--buffsize", `"3"`, "multiple of 4096"}},
		{Broadcast, []string{"-g", "2", "-r", "2"}, []string{"-r/--root", `"2"`, "from 0 to 1", "-1/all"}},
		{Reduce, []string{"-g", "3", "-r", "-2"}, []string{"-r/--root", `"-2"`, "from 0 to 2"}},
		{Gather, []string{"-r", "abc"}, []string{"-r/--root", `"abc"`}},
		{AllReduce, []string{"-G", "1"}, []string{"-G/--cudagraph", "use -G 0"}},
		{AllReduce, []string{"-D", "1"}, []string{"-D/--device_implementation", "needs -R 2"}},
		{AllReduce, []string{"--bogus"}, []string{"unknown flag: --bogus"}},
		{AllReduce, []string{"-Q", "1"}, []string{"unknown shorthand flag: 'Q'"}},
		{AllReduce, []string{"stray"}, []string{`unexpected argument "stray"`}},
		{AllReduce, []string{"-n"}, []string{"flag needs an argument", "-n"}},
		{AllReduce, []string{"-n", "x"}, []string{"invalid argument", `"x"`, "-n"}},
		{AllReduce, []string{"-t", "0"}, []string{"-t/--nthreads", "at least 1"}},
		{AllReduce, []string{"-g", "0"}, []string{"-g/--ngpus", "at least 1"}},
		{AllReduce, []string{"-g", "2000"}, []string{"at most 1024 ranks"}},
		{AllReduce, []string{"-n", "0"}, []string{"-n/--iters", "at least 1"}},
		{AllReduce, []string{"-m", "0"}, []string{"-m/--agg_iters", "at least 1"}},
		{AllReduce, []string{"-w", "-1"}, []string{"-w/--warmup_iters", "0 or more"}},
		{AllReduce, []string{"-N", "-1"}, []string{"-N/--run_cycles"}},
		{AllReduce, []string{"-f", "0"}, []string{"-f/--stepfactor", "at least 1"}},
		{AllReduce, []string{"-b", "8", "-e", "16", "-i", "0"}, []string{"-i/--stepbytes", "or use -f"}},
		{AllReduce, []string{"-c", "-1"}, []string{"-c/--check", "0 or more"}},
		{AllReduce, []string{"-z", "4"}, []string{"-z/--blocking", "0, 1, 2 or 3"}},
		{AllReduce, []string{"-T", "-1"}, []string{"-T/--timeout"}},
		{AllReduce, []string{"-u", "-1"}, []string{"-u/--unalign"}},
		{AllReduce, []string{"-K", "-1"}, []string{"-K/--bitwise"}},
		{AllReduce, []string{"-I", "2"}, []string{"-I/--per_iter_timing", "0 or 1"}},
		{AllReduce, []string{"-S", "2"}, []string{"-S/--report_timestamps", "0 or 1"}},
		{AllReduce, []string{"-M", "2"}, []string{"-M/--memory_report", "0 or 1"}},
		{AllReduce, []string{"-C", "2"}, []string{"-C/--report_cputime", "0 or 1"}},
		{AllReduce, []string{"-p", "2"}, []string{"-p/--parallel_init", "0 or 1"}},
		{AllReduce, []string{"--backend", "nccl2"}, []string{"--backend", `"nccl2"`, "embedded", "nccl"}},
		{AllReduce, []string{"--plot", "x.gif"}, []string{"--plot", `".gif"`, ".png, .svg or .pdf"}},
		{Hypercube, []string{"-g", "3"}, []string{"power-of-two", "3 ranks"}},
		{Hypercube, []string{"-t", "3", "-g", "2"}, []string{"power-of-two", "6 ranks"}},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s %s", c.test.Prog, strings.Join(c.args, " "))
		r := runPerf(t, c.test, args([]string{"-b", "8", "-e", "8", "-n", "1", "-w", "0"}, c.args)...)
		if r.code != exitInvalidUsage {
			t.Errorf("%s: exit %d, want %d\nstderr %q", name, r.code, exitInvalidUsage, r.stderr)
			continue
		}
		if r.stdout != "" {
			t.Errorf("%s: printed on stdout before failing:\n%s", name, r.stdout)
		}
		if !strings.Contains(r.stderr, c.test.Prog+": ") {
			t.Errorf("%s: stderr does not name the program: %q", name, r.stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr %q lacks %q", name, r.stderr, w)
			}
		}
	}
}

// TestHelp: --help prints the flags and exits 0.
func TestHelp(t *testing.T) {
	r := runPerf(t, AllReduce, "--help")
	if r.code != 0 {
		t.Fatalf("--help exit %d", r.code)
	}
	for _, f := range []string{"--nthreads", "--ngpus", "--minbytes", "--check-timed", "--nchannels", "--out", "--csv", "--force"} {
		if !strings.Contains(r.stderr, f) {
			t.Errorf("--help does not mention %s", f)
		}
	}
	if m := regexp.MustCompile(`(?m)^\s+-t, --nthreads`).FindString(r.stderr); m == "" {
		t.Errorf("--help has no '-t, --nthreads' line:\n%s", r.stderr)
	}
}

// --sizes measures exactly the sizes it names, ascending, once each; it
// replaces -b/-e/-f/-i, and a bad list or a mix is refused by name.
func TestSizesFlag(t *testing.T) {
	o, err := parseOptions("all_reduce_perf", []string{"--sizes", "3K, 12,1.5K,12"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{12, 1536, 3072}; !reflect.DeepEqual(o.SizeList, want) || o.MinBytes != 12 || o.MaxBytes != 3072 {
		t.Errorf("--sizes: list %v, -b %d -e %d; want %v from 12 to 3072", o.SizeList, o.MinBytes, o.MaxBytes, want)
	}
	r := runPerf(t, AllReduce, "--sizes", "12,96,1K", "-t", "2", "-n", "2", "-w", "1")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got []string
	for _, row := range dataRows(r.stdout) {
		got = append(got, strings.Fields(row)[0])
	}
	if want := []string{"12", "96", "1024"}; !reflect.DeepEqual(got, want) {
		t.Errorf("rows %v, want %v:\n%s", got, want, r.stdout)
	}
	for _, bad := range [][]string{{"--sizes", "8,x"}, {"--sizes", ""}, {"--sizes", "8,16", "-b", "8"}, {"--sizes", "8", "-f", "2"}} {
		_, err := parseOptions("all_reduce_perf", bad, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "--sizes") {
			t.Errorf("%q: err %v, want one naming --sizes", bad, err)
		}
	}
}
