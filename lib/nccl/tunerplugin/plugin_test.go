package tunerplugin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NCCL's numbering (its plugin ABI).
const (
	collAllGather = 2
	collAllReduce = 4
	algoTree      = 0
	algoRing      = 1
	protoLL       = 0
	protoLL128    = 1
	protoSimple   = 2
	nAlgos        = 7
	nProtos       = 3
	ignore        = float32(-1)
)

// plugin is the built .so loaded as NCCL would: its v6, v5 and v4 tables.
type plugin struct {
	v6     [5]uintptr // v5's and getChunkSize
	v5, v4 [4]uintptr // name, init, getCollInfo, finalize
}

func load(t *testing.T) *plugin {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the plugin is a Linux shared object")
	}
	cc := os.Getenv("CC")
	if _, err := FindCompiler(cc); err != nil {
		t.Skipf("skipping: %v", err)
	}
	so := filepath.Join(t.TempDir(), FileName)
	if err := Build(so, cc); err != nil {
		t.Fatal(err)
	}
	h, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Skipf("skipping: no libc.so.6 to read the plugin's tables with: %v", err)
	}
	var memcpy func(dst unsafe.Pointer, src uintptr, n uintptr) uintptr
	purego.RegisterLibFunc(&memcpy, libc, "memcpy")
	p := &plugin{}
	for _, c := range []struct {
		sym  string
		to   unsafe.Pointer
		size uintptr
	}{{"ncclTunerPlugin_v6", unsafe.Pointer(&p.v6), unsafe.Sizeof(p.v6)}, {"ncclTunerPlugin_v5", unsafe.Pointer(&p.v5), unsafe.Sizeof(p.v5)},
		{"ncclTunerPlugin_v4", unsafe.Pointer(&p.v4), unsafe.Sizeof(p.v4)}} {
		addr, err := purego.Dlsym(h, c.sym)
		if err != nil {
			t.Fatalf("%s not exported: %v", c.sym, err)
		}
		memcpy(c.to, addr, c.size)
	}
	return p
}

// initV5 returns the context and NCCL result of init for a communicator.
func (p *plugin) initV5(nRanks, nNodes int) (uintptr, uintptr) {
	var ctx uintptr
	r, _, _ := purego.SyscallN(p.v5[1], uintptr(unsafe.Pointer(&ctx)), 42, uintptr(nRanks), uintptr(nNodes), 0, 0, 0)
	return ctx, r
}

func (p *plugin) initV4(nRanks, nNodes int) (uintptr, uintptr) {
	var ctx uintptr
	r, _, _ := purego.SyscallN(p.v4[1], uintptr(nRanks), uintptr(nNodes), 0, uintptr(unsafe.Pointer(&ctx)))
	return ctx, r
}

// ask calls getCollInfo with a cost table of 10s (ignored pairs -1) and
// NCCL's unset channel count, and returns the table and channel count.
func ask(t *testing.T, fn, ctx uintptr, coll int, bytes int, ignored ...[2]int) ([nAlgos][nProtos]float32, int32) {
	t.Helper()
	var cost [nAlgos][nProtos]float32
	for a := range cost {
		for p := range cost[a] {
			cost[a][p] = 10
		}
	}
	for _, ap := range ignored {
		cost[ap[0]][ap[1]] = ignore
	}
	var ch int32
	r, _, _ := purego.SyscallN(fn, ctx, uintptr(coll), uintptr(bytes), 1, uintptr(unsafe.Pointer(&cost[0][0])),
		nAlgos, nProtos, 0, uintptr(unsafe.Pointer(&ch)))
	runtime.KeepAlive(&cost)
	if r != 0 {
		t.Fatalf("getCollInfo(%d, %d B) = %d", coll, bytes, r)
	}
	return cost, ch
}

// zeroed lists the (algo, proto) pairs set to cost 0.
func zeroed(cost [nAlgos][nProtos]float32) [][2]int {
	var out [][2]int
	for a := range cost {
		for p := range cost[a] {
			if cost[a][p] == 0 {
				out = append(out, [2]int{a, p})
			}
		}
	}
	return out
}

const rules = `# a gccl table's rules
allreduce,8,128,tree,ll,-1,1,2,-1,-1
allreduce, 1048576 , 16777215 ,ring,ll128,4,-1,-1
allreduce,1048576,16777215,ring,simple,-1,-1,-1
allgather,2242870,24642958,ring,ll128,-1,1,2
allreduce,134217728,18446744073709551615,tree,simple,-1,-1,8,-1,-1
`

func TestPluginAppliesRulesAndKeepsChannels(t *testing.T) {
	p := load(t)
	cfg := filepath.Join(t.TempDir(), "rules.csv")
	if err := os.WriteFile(cfg, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NCCL_TUNER_CONFIG_FILE", cfg)

	for _, v := range []struct {
		name string
		init func(int, int) (uintptr, uintptr)
		get  uintptr
		fin  uintptr
	}{{"v5", p.initV5, p.v5[2], p.v5[3]}, {"v4", p.initV4, p.v4[2], p.v4[3]}} {
		ctx, r := v.init(2, 1)
		if r != 0 || ctx == 0 {
			t.Fatalf("%s init = %d, ctx %#x", v.name, r, ctx)
		}
		for _, c := range []struct {
			coll, bytes int
			ignored     [][2]int
			want        [][2]int // the pair made cheapest (none: NCCL's choice)
			ch          int32    // 0: NCCL's count kept
		}{
			{collAllReduce, 8, nil, [][2]int{{algoTree, protoLL}}, 0},
			{collAllReduce, 128, nil, [][2]int{{algoTree, protoLL}}, 0},
			{collAllReduce, 129, nil, nil, 0},
			{collAllReduce, 4 << 20, nil, [][2]int{{algoRing, protoLL128}}, 4},
			// The first rule's pair cannot run: the next matching rule's does.
			{collAllReduce, 4 << 20, [][2]int{{algoRing, protoLL128}}, [][2]int{{algoRing, protoSimple}}, 0},
			{collAllReduce, 16 << 20, nil, nil, 0},
			{collAllGather, 4 << 20, nil, [][2]int{{algoRing, protoLL128}}, 0},
			{collAllGather, 2242869, nil, nil, 0},
			{collAllReduce, 1 << 30, nil, nil, 0}, // that rule is for 8 ranks
			{1 /* reduce */, 64, nil, nil, 0},
		} {
			cost, ch := ask(t, v.get, ctx, c.coll, c.bytes, c.ignored...)
			got := zeroed(cost)
			if len(got) != len(c.want) || (len(got) == 1 && got[0] != c.want[0]) || ch != c.ch {
				t.Errorf("%s coll %d, %d B: cheapest %v channels %d, want %v channels %d", v.name, c.coll, c.bytes, got, ch, c.want, c.ch)
			}
			for _, ig := range c.ignored {
				if cost[ig[0]][ig[1]] != ignore {
					t.Errorf("%s: an ignored pair was changed to %v", v.name, cost[ig[0]][ig[1]])
				}
			}
		}
		if r, _, _ := purego.SyscallN(v.fin, ctx); r != 0 {
			t.Errorf("%s finalize = %d", v.name, r)
		}
	}

	// On 8 ranks the 1 GiB rule applies and the 2-rank ones do not.
	ctx, r := p.initV5(8, 1)
	if r != 0 {
		t.Fatalf("init = %d", r)
	}
	if cost, _ := ask(t, p.v5[2], ctx, collAllReduce, 1<<30); len(zeroed(cost)) != 1 || zeroed(cost)[0] != [2]int{algoTree, protoSimple} {
		t.Errorf("8 ranks, 1 GiB: cheapest %v, want tree/simple", zeroed(cost))
	}
	if cost, _ := ask(t, p.v5[2], ctx, collAllReduce, 64); len(zeroed(cost)) != 0 {
		t.Errorf("8 ranks, 64 B: a 2-rank rule applied: %v", zeroed(cost))
	}
	purego.SyscallN(p.v5[3], ctx)
}

// A file the plugin cannot use fails init (NCCL reports it) rather than
// running on guesses.
func TestPluginRefusesBadConfig(t *testing.T) {
	p := load(t)
	dir := t.TempDir()
	for _, c := range []struct {
		name, text string
		want       uintptr
	}{
		{"unknown algorithm", "allreduce,8,128,trees,ll,-1,1,2\n", 4},
		{"unknown collective", "all_reduce,8,128,tree,ll,-1,1,2\n", 4},
		{"max below min", "allreduce,128,8,tree,ll,-1,1,2\n", 4},
		{"too few fields", "allreduce,8,128,tree,ll,-1,1\n", 4},
		{"too many fields", "allreduce,8,128,tree,ll,-1,1,2,-1,-1,7\n", 4},
		{"zero channels", "allreduce,8,128,tree,ll,0,1,2\n", 4},
		{"bad regBuff", "allreduce,8,128,tree,ll,-1,1,2,-1,2\n", 4},
		{"not a number", "allreduce,8,1K,tree,ll,-1,1,2\n", 4},
		{"empty is fine", "# nothing\n\n", 0},
	} {
		cfg := filepath.Join(dir, "c.csv")
		if err := os.WriteFile(cfg, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("NCCL_TUNER_CONFIG_FILE", cfg)
		ctx, r := p.initV5(2, 1)
		if r != c.want {
			t.Errorf("%s: init = %d, want %d", c.name, r, c.want)
		}
		if r == 0 {
			purego.SyscallN(p.v5[3], ctx)
		}
	}
	t.Setenv("NCCL_TUNER_CONFIG_FILE", filepath.Join(dir, "missing.csv"))
	if _, r := p.initV5(2, 1); r != 2 {
		t.Errorf("a missing file: init = %d, want 2 (ncclSystemError)", r)
	}
	t.Setenv("NCCL_TUNER_CONFIG_FILE", "")
	if _, r := p.initV5(2, 1); r != 4 {
		t.Errorf("no file named: init = %d, want 4 (ncclInvalidArgument)", r)
	}
}

// v6 (NCCL 2.30.3 on) is v5 with no chunk-size hook: NCCL keeps its own
// chunk size.
func TestPluginV6(t *testing.T) {
	p := load(t)
	for i := 1; i < 4; i++ {
		if p.v6[i] != p.v5[i] {
			t.Errorf("v6 entry %d is %#x, v5's %#x: want the same functions", i, p.v6[i], p.v5[i])
		}
	}
	if p.v6[4] != 0 {
		t.Errorf("v6 getChunkSize is set (%#x): a plugin with no chunk rules must leave NCCL's", p.v6[4])
	}
}

// With no rule for a call the plugin is no plugin: every cost NCCL
// computed (ignored pairs too) and the channel count come back as they
// went in, for every collective and size, also when the file has rules
// for other calls.
func TestPluginWithoutRulesChangesNothing(t *testing.T) {
	p := load(t)
	dir := t.TempDir()
	for _, text := range []string{"# no rules\n", "allreduce,8,64,tree,ll,2,-1,-1\n"} {
		cfg := filepath.Join(dir, "c.csv")
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("NCCL_TUNER_CONFIG_FILE", cfg)
		ctx, r := p.initV5(4, 1)
		if r != 0 {
			t.Fatalf("init = %d", r)
		}
		for coll := 0; coll < 5; coll++ {
			for _, bytes := range []int{0, 1, 8, 65, 4096, 1 << 20, 1 << 30} {
				if coll == collAllReduce && bytes >= 8 && bytes <= 64 && text != "# no rules\n" {
					continue // the rule's own calls
				}
				var cost, want [nAlgos][nProtos]float32
				for a := range cost {
					for q := range cost[a] {
						cost[a][q] = float32(a*10+q) + 0.5
						if (a+q)%3 == 0 {
							cost[a][q] = ignore
						}
					}
				}
				want = cost
				ch := int32(17)
				r, _, _ := purego.SyscallN(p.v5[2], ctx, uintptr(coll), uintptr(bytes), 1, uintptr(unsafe.Pointer(&cost[0][0])),
					nAlgos, nProtos, 0, uintptr(unsafe.Pointer(&ch)))
				runtime.KeepAlive(&cost)
				if r != 0 || cost != want || ch != 17 {
					t.Errorf("%q coll %d, %d B: result %d, channels %d (want 17), table changed: %v", text, coll, bytes, r, ch, cost != want)
				}
			}
		}
		purego.SyscallN(p.v5[3], ctx)
	}
}

// TestFindCompiler: the compiler the caller names wins over cc and gcc;
// CompilerFromEnv names $CC's.
func TestFindCompiler(t *testing.T) {
	named, err := exec.LookPath("true") // any program stands for one
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	if got, err := FindCompiler(named); err != nil || got != named {
		t.Errorf("FindCompiler(%q) = %q, %v; want it", named, got, err)
	}
	t.Setenv("CC", named)
	if got, err := CompilerFromEnv(); err != nil || got != named {
		t.Errorf("CompilerFromEnv with CC=%s = %q, %v; want it", named, got, err)
	}
}
