package tracestat

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/tef"
)

// TestRealNCCLTrace reads what gccl's NCCL profiler plugin wrote on four
// H200s (NCCL 2.28.3, a 1 MiB allreduce over NCCL's network transport,
// the events inside one operation): the file keeps the format's rules,
// and the summary finds its four ranks' operation, the proxy operations'
// steps and the waits with the peers they name.
func TestRealNCCLTrace(t *testing.T) {
	f, err := tef.Read(bytes.NewReader(ncclTrace(t)))
	if err != nil {
		t.Fatal(err)
	}
	if errs := tef.Validate(f); errs != nil {
		t.Fatalf("the plugin's trace breaks the format's rules: %v", errs)
	}
	tr, err := FromEvents(f.TraceEvents)
	if err != nil {
		t.Fatal(err)
	}
	s, err := tr.Summarize(Options{Op: -1, Top: 5})
	if err != nil {
		t.Fatal(err)
	}
	if s.Ranks != 4 || len(s.Ops) != 1 {
		t.Fatalf("%d ranks, %d operations: want the one operation of 4 ranks", s.Ranks, len(s.Ops))
	}
	op := s.Ops[0]
	if op.Name != "AllReduce" || op.Bytes != 1<<20 || len(op.Ranks) != 4 || op.Dur() <= 0 {
		t.Errorf("operation %+v: want a 1 MiB AllReduce of 4 ranks", op)
	}
	steps, waits := 0, 0
	for _, ts := range s.Tracks {
		steps += ts.Steps
		waits += ts.Waits
		if ts.Busy < 0 || ts.Wait < 0 || ts.Busy+ts.Wait > ts.Active+1e-3 {
			t.Errorf("track %s of rank %d: busy %.3f + wait %.3f over its active %.3f", ts.Label, ts.Rank, ts.Busy, ts.Wait, ts.Active)
		}
	}
	if steps != 52 || waits != 156 {
		t.Errorf("%d steps and %d waits, want the file's 52 and 156", steps, waits)
	}
	if len(s.Waits) != 5 {
		t.Fatalf("%d longest waits, want 5", len(s.Waits))
	}
	for _, w := range s.Waits {
		if w.Peer < 0 || w.Peer > 3 || w.Peer == w.Rank || w.Step == "" || !strings.Contains(w.Track, "proxy") {
			t.Errorf("wait %+v: want one inside a proxy step, on a track the file names a proxy's, naming another of the 4 ranks", w)
		}
	}
	if s.Path == nil || len(s.Path.Links) == 0 {
		t.Errorf("no critical path for the operation")
	}
}
