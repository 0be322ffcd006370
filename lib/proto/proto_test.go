package proto_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/proto"
)

func TestParseStringRoundTrip(t *testing.T) {
	if got := proto.All(); len(got) != int(proto.NumProtocols) || got[0] != proto.LL || got[1] != proto.LL128 || got[2] != proto.Simple {
		t.Fatalf("All() = %v", got)
	}
	if proto.LL != 0 || proto.LL128 != 1 || proto.Simple != 2 {
		t.Fatalf("protocol numbering differs from NCCL's")
	}
	for _, p := range proto.All() {
		if !p.Valid() {
			t.Fatalf("%v not valid", p)
		}
		for _, s := range []string{p.String(), strings.ToLower(p.String()), strings.ToUpper(p.String()), " " + p.String() + "\t"} {
			got, err := proto.Parse(s)
			if err != nil || got != p {
				t.Errorf("Parse(%q) = %v, %v; want %v", s, got, err, p)
			}
		}
	}
	want := map[proto.Protocol]string{proto.LL: "LL", proto.LL128: "LL128", proto.Simple: "Simple"}
	for p, s := range want {
		if p.String() != s {
			t.Errorf("%d.String() = %q, want %q", int(p), p.String(), s)
		}
	}
	for _, bad := range []string{"", "ll64", "simple2", "LL 128", "tree"} {
		_, err := proto.Parse(bad)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%q", bad)) || !strings.Contains(msg, "LL, LL128, Simple") {
			t.Errorf("Parse(%q) error %q should quote the input and list the valid names", bad, msg)
		}
	}
	for _, p := range []proto.Protocol{-1, proto.NumProtocols, 42} {
		if p.Valid() || p.String() != fmt.Sprintf("Protocol(%d)", int(p)) {
			t.Errorf("invalid protocol %d: Valid %v String %q", int(p), p.Valid(), p.String())
		}
	}
}

// TestStepDataDefaults: payload per step of NCCL's default buffers
// (DESIGN.md section 3): Simple 512 KiB, LL 32 KiB (64 KiB of lines at 50%),
// LL128 576000 B (4800 lines of 120 B). gccl's own defaults differ in
// Simple's only: 1 MiB.
func TestStepDataDefaults(t *testing.T) {
	if g := proto.DefaultBuffSizes(); g[proto.LL] != 512<<10 || g[proto.LL128] != 4915200 || g[proto.Simple] != 1<<20 {
		t.Fatalf("DefaultBuffSizes = %v", g)
	}
	d := proto.NCCLBuffSizes()
	if d[proto.LL] != 512<<10 || d[proto.LL128] != 4915200 || d[proto.Simple] != 4<<20 {
		t.Fatalf("NCCLBuffSizes = %v", d)
	}
	want := map[proto.Protocol]int{proto.Simple: 512 << 10, proto.LL: 32 << 10, proto.LL128: 576000}
	for p, w := range want {
		if got := p.StepData(d[p]); got != w {
			t.Errorf("%v.StepData(%d) = %d, want %d", p, d[p], got, w)
		}
		if err := proto.ValidateBuffSize(p, d[p]); err != nil {
			t.Errorf("default %v buffer rejected: %v", p, err)
		}
		f, err := proto.NewFifo(p, d[p], proto.FifoOptions{})
		if err != nil {
			t.Fatalf("NewFifo(%v, default): %v", p, err)
		}
		if f.StepData() != w || f.StepBytes != d[p]/proto.Steps {
			t.Errorf("%v fifo: StepData %d StepBytes %d", p, f.StepData(), f.StepBytes)
		}
	}
	grains := map[proto.Protocol]int{proto.LL: 16, proto.LL128: 1920, proto.Simple: 512}
	for p, g := range grains {
		if p.Grain() != g {
			t.Errorf("%v.Grain() = %d, want %d", p, p.Grain(), g)
		}
		// A step of the default buffer holds a whole number of grains.
		if p.StepData(d[p])%g != 0 {
			t.Errorf("%v: step data %d is not a multiple of the grain %d", p, p.StepData(d[p]), g)
		}
	}
	// Efficiency: LL carries half of its lines, LL128 15/16.
	if proto.LL.StepData(1<<20) != (1<<20)/proto.Steps/2 || proto.LL128.StepData(proto.Steps*2048) != 1920 {
		t.Errorf("LL/LL128 efficiency wrong")
	}
}

func TestValidateBuffSize(t *testing.T) {
	// Per step: LL two 16-byte lines (so a step carries whole 16-byte LL
	// grains), LL128 16 lines (one 1920-byte grain), Simple 512 B.
	quantum := map[proto.Protocol]int{proto.LL: 32, proto.LL128: 2048, proto.Simple: 512}
	for _, p := range proto.All() {
		q := proto.Steps * quantum[p]
		for _, ok := range []int{q, 2 * q, 37 * q, proto.MaxBuffSize} {
			if err := proto.ValidateBuffSize(p, ok); err != nil {
				t.Errorf("%v size %d rejected: %v", p, ok, err)
			}
			// Every valid buffer's step carries whole grains.
			if d := p.StepData(ok); d <= 0 || d%p.Grain() != 0 {
				t.Errorf("%v size %d: step data %d is not a positive multiple of the grain %d", p, ok, d, p.Grain())
			}
		}
		for _, bad := range []int{0, -q, q - 1, q + 1, q + quantum[p], q + quantum[p]/2, 3*q + 8, proto.MaxBuffSize + q, 1 << 40} {
			err := proto.ValidateBuffSize(p, bad)
			if err == nil {
				t.Errorf("%v size %d accepted", p, bad)
				continue
			}
			msg := err.Error()
			for _, want := range []string{p.String() + " buffer", fmt.Sprint(bad), fmt.Sprintf("multiple of %d", q), fmt.Sprint(proto.MaxBuffSize)} {
				if !strings.Contains(msg, want) {
					t.Errorf("%v size %d: error %q lacks %q", p, bad, msg, want)
				}
			}
			if _, err := proto.NewFifo(p, bad, proto.FifoOptions{}); err == nil {
				t.Errorf("NewFifo(%v, %d) succeeded", p, bad)
			}
		}
	}
}
