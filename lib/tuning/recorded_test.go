package tuning

import "testing"

func TestRecordedChoice(t *testing.T) {
	for _, c := range []struct {
		coll, algo, proto, chosen string
		wantAlgo, wantProto       string
	}{
		{"allreduce", "ring", "ll128", "", "Ring", "LL128"},
		{"allreduce", "", " Auto ", "", "auto", "auto"},
		{"allreduce", "auto", "LL", "", "auto", "LL"},         // allreduce has a tree: auto stays
		{"allgather", "auto", "simple", "", "Ring", "Simple"}, // Ring alone: the protocol-only run forced Ring
		{"allgather", "auto", "LL", "OneShot", "auto", "LL"},  // but not where the stack ran the one-shot
		{"allgather", "auto", "auto", "", "auto", "auto"},
		{"allgather", "Foo", "Bar", "", "Foo", "Bar"}, // unknown names kept as given
	} {
		a, p := RecordedChoice(c.coll, c.algo, c.proto, c.chosen)
		if a != c.wantAlgo || p != c.wantProto {
			t.Errorf("RecordedChoice(%q, %q, %q, %q) = %q, %q; want %q, %q", c.coll, c.algo, c.proto, c.chosen, a, p, c.wantAlgo, c.wantProto)
		}
	}
}
