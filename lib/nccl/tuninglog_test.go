package nccl

import (
	"os"
	"path/filepath"
	"testing"
)

// Both formats NCCL has printed its decisions in parse to gccl's names.
func TestParseTuningLine(t *testing.T) {
	cases := []struct {
		line string
		want Choice
		ok   bool
	}{
		{"host:1:1 [0] NCCL INFO AllReduce: 4096 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}",
			Choice{Coll: "AllReduce", Bytes: 4096, Algo: "Tree", Proto: "LL", NChannels: 2}, true},
		{"NCCL INFO AllGather: 8388608 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..15}",
			Choice{Coll: "AllGather", Bytes: 8388608, Algo: "Ring", Proto: "Simple", NChannels: 16}, true},
		{"NCCL INFO AllReduce: 268435456 Bytes -> Algo NVLS proto Simple",
			Choice{Coll: "AllReduce", Bytes: 268435456, Algo: "NVLS", Proto: "Simple"}, true},
		{"NCCL INFO 37756928 Bytes -> Algo 1 proto 2 time 2860.208008",
			Choice{Bytes: 37756928, Algo: "Ring", Proto: "Simple"}, true},
		{"NCCL INFO 4096 Bytes -> Algo 0 proto 1 time 12.5",
			Choice{Bytes: 4096, Algo: "Tree", Proto: "LL128"}, true},
		{"NCCL INFO Channel 00/02 : 0", Choice{}, false},
		{"NCCL INFO NCCL_PROTO set by environment to LL", Choice{}, false},
		{"", Choice{}, false},
	}
	for _, c := range cases {
		got, ok := ParseTuningLine(c.line)
		if ok != c.ok || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

// The log is followed as NCCL appends to it, a partial last line waits
// for its end, and the latest decision per collective wins.
func TestTuningLogFollows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nccl.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	l, err := OpenTuningLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, ok := l.Last("AllReduce"); ok {
		t.Fatal("a decision from an empty log")
	}
	write("x NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}\n")
	write("x NCCL INFO AllGather: 64 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..3}\n")
	write("x NCCL INFO AllReduce: 1048576 Bytes -> Algo TR") // NCCL is mid-line
	c, ok := l.Last("allreduce")
	if !ok || c.Bytes != 8 || c.Proto != "LL" {
		t.Fatalf("after a partial line: %+v, %v; want the 8-byte LL decision", c, ok)
	}
	write("EE proto SIMPLE channel{Lo..Hi}={0..7}\n")
	c, ok = l.Last("AllReduce")
	if !ok || c.Bytes != 1048576 || c.Algo != "Tree" || c.Proto != "Simple" || c.NChannels != 8 {
		t.Fatalf("after the line ended: %+v, %v", c, ok)
	}
	if c, ok := l.Last("AllGather"); !ok || c.Proto != "LL128" || c.NChannels != 4 {
		t.Errorf("AllGather: %+v, %v", c, ok)
	}
	if _, ok := l.Last("Broadcast"); ok {
		t.Error("a Broadcast decision that was never logged")
	}
}

// The log is wanted only at INFO (or TRACE) with TUNING among the
// subsystems; NCCL_DEBUG_FILE's %h and %p expand as NCCL expands them.
func TestTuningLogWanted(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want bool
		file string
	}{
		{map[string]string{}, false, ""},
		{map[string]string{"NCCL_DEBUG": "WARN", "NCCL_DEBUG_SUBSYS": "TUNING"}, false, ""},
		{map[string]string{"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV"}, false, ""},
		{map[string]string{"NCCL_DEBUG": "info", "NCCL_DEBUG_SUBSYS": "init,tuning"}, true, ""},
		{map[string]string{"NCCL_DEBUG": "TRACE", "NCCL_DEBUG_SUBSYS": "ALL", "NCCL_DEBUG_FILE": "/tmp/n.%h.%p"}, true, "/tmp/n.node7.42"},
		{map[string]string{"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "ALL,^TUNING"}, false, ""},
	}
	for _, c := range cases {
		lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		want, file := TuningLogWanted(lookup, "node7", 42)
		if want != c.want || file != c.file {
			t.Errorf("%v: %v %q, want %v %q", c.env, want, file, c.want, c.file)
		}
	}
}

// Whatever NCCL (or a corrupted log) writes, parsing never panics and a
// decision it returns is sane.
func FuzzParseTuningLine(f *testing.F) {
	f.Add("NCCL INFO AllReduce: 4096 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}")
	f.Add("NCCL INFO 37756928 Bytes -> Algo 1 proto 2 time 2860.208008")
	f.Add("x AllGather: 99999999999999999999 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={9..2}")
	f.Fuzz(func(t *testing.T, line string) {
		c, ok := ParseTuningLine(line)
		if !ok {
			if c != (Choice{}) {
				t.Fatalf("no decision but %+v", c)
			}
			return
		}
		if c.Bytes < 0 || c.NChannels < 0 || c.Algo == "" || c.Proto == "" {
			t.Fatalf("%q: %+v", line, c)
		}
	})
}
