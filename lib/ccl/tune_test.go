package ccl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/internal/syncbuf"
	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/tuning"
)

const testTable = `{"version": 1, "rules": [
  {"coll": "allreduce", "bytes": [0, 1023], "algo": "Tree", "proto": "LL", "channels": 1},
  {"coll": "allreduce", "bytes": [1024, 65535], "algo": "Ring", "proto": "LL128", "channels": 0},
  {"coll": "allreduce", "bytes": [65536, -1], "algo": "Ring", "proto": "Simple", "channels": 2, "buffsize": 65536}
]}`

func parseTestTable(t *testing.T) *tuning.Table {
	t.Helper()
	tab, err := tuning.ParseTable([]byte(testTable), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// allReduceChoice runs one exact-checked float32 sum allreduce of count
// elements on every rank and returns rank 0's choice.
func allReduceChoice(t *testing.T, comms []*Comm, count int) Choice {
	t.Helper()
	n := len(comms)
	want := make([]byte, 4*count)
	exact.Expected(want, reduce.Float32, reduce.Sum, 7, n, 0, count)
	perRank(comms, func(c *Comm) {
		send := make([]byte, 4*count)
		exact.Fill(send, reduce.Float32, reduce.Sum, 7, c.Rank(), n, 0, count)
		recv := make([]byte, 4*count)
		if err := c.AllReduce(send, recv, count, reduce.Float32, RedOp{Op: reduce.Sum}); err != nil {
			t.Error(err)
			return
		}
		if err := c.Synchronize(); err != nil {
			t.Error(err)
			return
		}
		if !bytes.Equal(recv, want) {
			t.Errorf("rank %d: wrong allreduce result for count %d", c.Rank(), count)
		}
	})
	return comms[0].LastChoice()
}

func TestTuningTablePrecedence(t *testing.T) {
	tab := parseTestTable(t)
	type want struct {
		algo, proto, source string
		nch                 int // 0: any
	}
	cases := []struct {
		name  string
		cfg   Config
		count int // float32 elements
		want  want
	}{
		{"table small", Config{Tuning: tab}, 100, want{"Tree", "LL", "table", 1}},
		{"table mid, model picks channels", Config{Tuning: tab}, 2000, want{"Ring", "LL128", "table", 0}},
		{"table large", Config{Tuning: tab}, 100_000, want{"Ring", "Simple", "table", 2}},
		{"forced proto over table", Config{Tuning: tab, Proto: protoReq("LL128")}, 100, want{"Tree", "LL128", "forced+table", 1}},
		{"forced channels over table", Config{Tuning: tab, NChannels: 1}, 100_000, want{"Ring", "Simple", "forced+table", 1}},
		{"everything forced", Config{Tuning: tab, Proto: protoReq("Simple"), Algo: algoReq("Ring"), NChannels: 1}, 100, want{"Ring", "Simple", "forced", 1}},
		{"no table: model", Config{}, 100, want{"", "", "model", 0}},
		{"forced algo, model rest", Config{Algo: algoReq("Tree")}, 100, want{"Tree", "", "forced+model", 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			comms := initT(t, 4, c.cfg)
			got := allReduceChoice(t, comms, c.count)
			if got.Source != c.want.source || (c.want.algo != "" && got.Algo != c.want.algo) ||
				(c.want.proto != "" && got.Proto != c.want.proto) || (c.want.nch > 0 && got.NChannels != c.want.nch) {
				t.Fatalf("choice %+v, want %+v", got, c.want)
			}
			if got.PredictedUs <= 0 {
				t.Fatalf("choice %+v has no predicted time", got)
			}
		})
	}
}

// A rule's buffer size makes the operation run over FIFOs of that size.
func TestTuningTableBuffSize(t *testing.T) {
	comms := initT(t, 3, Config{Tuning: parseTestTable(t), NChannels: 2})
	allReduceChoice(t, comms, 300_000)
	found := false
	for k, e := range comms[0].ends {
		if k.proto == proto.Simple && k.buff == 65536 && e.send != nil {
			found = true
		}
	}
	if !found {
		t.Fatal("no 64 KiB Simple connection: the rule's buffsize was not obeyed")
	}
}

func TestTuningFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		cfg  Config
		want []string
	}{
		{Config{TuningFile: filepath.Join(dir, "missing.json")}, []string{"tuning table", "missing.json"}},
		{Config{TuningFile: write("tree.json", `{"version": 1, "rules": [
  {"coll": "allgather", "bytes": [0, -1], "algo": "Tree", "proto": "LL"}]}`)}, []string{"tree.json:2", "Tree", "allgather"}},
		{Config{TuningFile: write("overlap.json", `{"version": 1, "rules": [
  {"coll": "allreduce", "bytes": [0, 100], "algo": "Ring", "proto": "LL"},
  {"coll": "allreduce", "bytes": [50, 200], "algo": "Ring", "proto": "LL"}]}`)}, []string{"overlap.json:3", "rule 2", "rule 1"}},
		{Config{ModelFile: write("model.json", `{"base_lat_us": {"Ring": {"LL64": 1}}}`)}, []string{"GCCL_MODEL_FILE", "model.json", "LL64"}},
		{Config{Debug: "LOUD"}, []string{"Debug", "LOUD", "INFO"}},
		{Config{RanksPerHost: -1}, []string{"RanksPerHost", "-1"}},
	}
	for _, c := range cases {
		_, err := InitAll(2, c.cfg)
		if err == nil {
			t.Errorf("%+v: InitAll succeeded, want an error", c.cfg)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q does not mention %q", c.cfg, err, w)
			}
		}
	}
	// The environment variable, applied by the caller, reaches the same
	// loader; InitAll alone does not read it.
	t.Setenv(EnvTuningFile, filepath.Join(dir, "missing.json"))
	cfg, err := ConfigFromEnv()
	if err != nil || cfg.TuningFile != filepath.Join(dir, "missing.json") {
		t.Fatalf("ConfigFromEnv: TuningFile %q, %v; want the variable's path", cfg.TuningFile, err)
	}
	if _, err := InitAll(2, cfg); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("GCCL_TUNING_FILE: want an error naming the missing file, got %v", err)
	}
	comms, err := InitAll(2, Config{})
	if err != nil {
		t.Fatalf("InitAll(Config{}) read GCCL_TUNING_FILE: %v", err)
	}
	for _, c := range comms {
		c.Destroy()
	}
}

func TestDebugInfoLogsEveryOperation(t *testing.T) {
	var buf syncBuffer
	comms := initT(t, 2, Config{Debug: "INFO", DebugWriter: &buf})
	allReduceChoice(t, comms, 1000)
	allReduceChoice(t, comms, 1000)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 { // 2 operations x 2 ranks
		t.Fatalf("want 4 lines (2 ops x 2 ranks), got %d:\n%s", len(lines), buf.String())
	}
	for _, l := range lines {
		for _, w := range []string{"gccl INFO", "allreduce", "4000 B", "by model", "predicted"} {
			if !strings.Contains(l, w) {
				t.Fatalf("line %q lacks %q", l, w)
			}
		}
	}
	// Without INFO nothing is written.
	var quiet syncBuffer
	comms = initT(t, 2, Config{Debug: "WARN", DebugWriter: &quiet})
	allReduceChoice(t, comms, 1000)
	if quiet.Len() != 0 {
		t.Fatalf("GCCL_DEBUG=WARN wrote %q", quiet.String())
	}
}

// With nothing forced, every size runs whatever the model picks and gets
// the exact result: 8 ranks on 8 "hosts", under constants whose tree runs
// at a third of the ring's bandwidth (and a one-shot reading at 0.75 GB/s),
// make the model pick the one-shot for the smallest sizes, trees above and
// rings for large ones.
func TestModelChoicesAreCorrect(t *testing.T) {
	file := filepath.Join(t.TempDir(), "model.json")
	slowTree := `{"version": 1, "tree_bw_factor": 0.3, "out_of_cache_bw_factor": {"Tree": {"LL": 0.5, "LL128": 0.5, "Simple": 0.5}},
		"max_channel_bw_gbs": {"OneShot": {"LL": 0.75}}}`
	if err := os.WriteFile(file, []byte(slowTree), 0o644); err != nil {
		t.Fatal(err)
	}
	comms := initT(t, 8, Config{RanksPerHost: 1, ModelFile: file})
	algos := map[string]bool{}
	for _, count := range []int{1, 64, 256, 1024, 4096, 70_000, 1 << 20} {
		ch := allReduceChoice(t, comms, count)
		if ch.Source != "model" || ch.NHosts != 8 {
			t.Fatalf("count %d: choice %+v, want the model's over 8 hosts", count, ch)
		}
		algos[ch.Algo] = true
	}
	if !algos["Tree"] || !algos["Ring"] || !algos["OneShot"] {
		t.Fatalf("the model picked only %v over sizes 4 B..4 MiB on 8 hosts; want OneShot, Tree and Ring", algos)
	}
}

// syncBuffer is a bytes.Buffer that several ranks' goroutines may write.
type syncBuffer = syncbuf.Buffer
