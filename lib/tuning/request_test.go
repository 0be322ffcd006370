package tuning

import (
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/proto"
)

func TestRequestZeroValueIsAuto(t *testing.T) {
	var r Request
	if !r.Algo.IsAuto() || !r.Proto.IsAuto() {
		t.Fatalf("zero Request: Algo auto %v, Proto auto %v; want both auto", r.Algo.IsAuto(), r.Proto.IsAuto())
	}
	if _, ok := r.Algo.Get(); ok {
		t.Errorf("zero AlgoReq.Get: ok, want auto")
	}
	if _, ok := r.Proto.Get(); ok {
		t.Errorf("zero ProtoReq.Get: ok, want auto")
	}
	if got := r.String(); got != "auto/auto/auto" {
		t.Errorf("zero Request.String() = %q, want auto/auto/auto", got)
	}
}

func TestAlgoReqRoundTrip(t *testing.T) {
	for _, a := range Algos() {
		r := ForceAlgo(a)
		if got, ok := r.Get(); !ok || got != a || r.IsAuto() {
			t.Errorf("ForceAlgo(%v).Get() = %v, %v", a, got, ok)
		}
		for _, s := range []string{a.String(), strings.ToLower(a.String()), " " + strings.ToUpper(a.String()) + " "} {
			p, err := ParseAlgoReq(s)
			if err != nil || p != r {
				t.Errorf("ParseAlgoReq(%q) = %v, %v; want %v", s, p, err, r)
			}
		}
		if back, err := ParseAlgoReq(r.String()); err != nil || back != r {
			t.Errorf("ParseAlgoReq(%q) = %v, %v; want %v", r.String(), back, err, r)
		}
	}
}

func TestProtoReqRoundTrip(t *testing.T) {
	for _, p := range proto.All() {
		r := ForceProto(p)
		if got, ok := r.Get(); !ok || got != p || r.IsAuto() {
			t.Errorf("ForceProto(%v).Get() = %v, %v", p, got, ok)
		}
		for _, s := range []string{p.String(), strings.ToLower(p.String()), " " + strings.ToUpper(p.String()) + " "} {
			q, err := ParseProtoReq(s)
			if err != nil || q != r {
				t.Errorf("ParseProtoReq(%q) = %v, %v; want %v", s, q, err, r)
			}
		}
		if back, err := ParseProtoReq(r.String()); err != nil || back != r {
			t.Errorf("ParseProtoReq(%q) = %v, %v; want %v", r.String(), back, err, r)
		}
	}
}

func TestReqAutoSpellings(t *testing.T) {
	for _, s := range []string{"", " ", "auto", "AUTO", "Auto", " auto "} {
		a, err := ParseAlgoReq(s)
		if err != nil || !a.IsAuto() || a.String() != "auto" {
			t.Errorf("ParseAlgoReq(%q) = %v, %v; want auto", s, a, err)
		}
		p, err := ParseProtoReq(s)
		if err != nil || !p.IsAuto() || p.String() != "auto" {
			t.Errorf("ParseProtoReq(%q) = %v, %v; want auto", s, p, err)
		}
	}
}

func TestReqBadNamesListValid(t *testing.T) {
	for _, s := range []string{"Mesh", "LL", "autox", "Ring/"} {
		_, err := ParseAlgoReq(s)
		want := `unknown algorithm "` + s + `" (valid: Ring, Tree, OneShot, TwoShot, auto)`
		if err == nil || err.Error() != want {
			t.Errorf("ParseAlgoReq(%q) error = %v, want %s", s, err, want)
		}
	}
	for _, s := range []string{"LL64", "Ring", "autox", "simple2"} {
		_, err := ParseProtoReq(s)
		want := `unknown protocol "` + s + `" (valid: LL, LL128, Simple, auto)`
		if err == nil || err.Error() != want {
			t.Errorf("ParseProtoReq(%q) error = %v, want %s", s, err, want)
		}
	}
}

func TestRequestStringAndParse(t *testing.T) {
	cases := []struct {
		in   string
		want Request
		str  string
	}{
		{"auto", Request{}, "auto/auto/auto"},
		{"AUTO", Request{}, "auto/auto/auto"},
		{"auto/auto/auto", Request{}, "auto/auto/auto"},
		{"Ring/LL/2", Request{Algo: ForceAlgo(Ring), Proto: ForceProto(proto.LL), NChannels: 2}, "Ring/LL/2"},
		{"tree/simple/auto", Request{Algo: ForceAlgo(Tree), Proto: ForceProto(proto.Simple)}, "Tree/Simple/auto"},
		{"auto/LL128/64", Request{Proto: ForceProto(proto.LL128), NChannels: 64}, "auto/LL128/64"},
		{"OneShot/LL/1", Request{Algo: ForceAlgo(OneShot), Proto: ForceProto(proto.LL), NChannels: 1}, "OneShot/LL/1"},
		{"TwoShot/auto/auto", Request{Algo: ForceAlgo(TwoShot)}, "TwoShot/auto/auto"},
	}
	for _, c := range cases {
		got, err := ParseRequest(c.in, 64)
		if err != nil || got != c.want {
			t.Errorf("ParseRequest(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if s := got.String(); s != c.str {
			t.Errorf("ParseRequest(%q).String() = %q, want %q", c.in, s, c.str)
		}
		if back, err := ParseRequest(got.String(), 64); err != nil || back != got {
			t.Errorf("ParseRequest(%q) = %+v, %v; want %+v (round trip)", got.String(), back, err, got)
		}
	}
	if s := (Request{Algo: ForceAlgo(Ring), BuffSize: 1 << 20}).String(); s != "Ring/auto/auto/buff=1048576" {
		t.Errorf("String with a buffer size = %q", s)
	}
}

func TestParseRequestErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Ring/LL", "not three parts"},
		{"Ring/LL/1/2", "not three parts"},
		{"Mesh/LL/1", "unknown algorithm \"Mesh\" (valid: Ring, Tree, OneShot, TwoShot, auto)"},
		{"Ring/LL64/1", "unknown protocol \"LL64\" (valid: LL, LL128, Simple, auto)"},
		{"Ring/LL/0", "channels must be 1..64 or auto"},
		{"Ring/LL/65", "channels must be 1..64 or auto"},
		{"Ring/LL/two", "channels must be 1..64 or auto"},
		{"TwoShot/LL128/1", "algorithm TwoShot runs on LL only, not LL128"},
		{"OneShot/Simple/auto", "algorithm OneShot runs on LL only, not Simple"},
	}
	for _, c := range cases {
		_, err := ParseRequest(c.in, 64)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRequest(%q) error = %v, want one containing %q", c.in, err, c.want)
		}
	}
}
