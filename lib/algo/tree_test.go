package algo_test

import (
	"testing"

	"github.com/gccl/gccl/lib/algo"
	"github.com/gccl/gccl/lib/proto"
)

func TestTreeChunkBytesFullStepForLargeMessages(t *testing.T) {
	b := proto.DefaultBuffSizes()
	for _, p := range proto.All() {
		got := algo.TreeChunkBytes(p, b[p], 1<<30, 4, 8, 4, 5)
		want := p.StepData(b[p]) / p.Grain() * p.Grain()
		if p == proto.Simple {
			want = b[p] / proto.Steps
		}
		if got != want {
			t.Errorf("%s 1 GiB: chunk %d, want one full step %d", p, got, want)
		}
	}
}

// The shrinking rules, replayed by hand for NCCL's default buffers.
func TestTreeChunkBytesShrinksLikeNCCL(t *testing.T) {
	b := proto.NCCLBuffSizes()
	cases := []struct {
		p                          proto.Protocol
		bytes                      int64
		nCh, nRanks, nHosts, depth int
		want                       int
	}{
		// Simple, step 512 KiB, depth 3, 1 channel: 4 MiB / 512K = 8 < 24
		// -> 256K (16 < 24) -> 128K stops the first rule (floor); 4 MiB/128K
		// = 32 >= 12 and >= 3: 128 KiB.
		{proto.Simple, 4 << 20, 1, 4, 4, 3, 128 << 10},
		// 256 KiB: halves to 128K (rule 1), 64K (rule 2: 4 < 12), then rule
		// 3: 256K/64K = 4 >= 3: 64 KiB.
		{proto.Simple, 256 << 10, 1, 4, 4, 3, 64 << 10},
		// Tiny: down to the 32 KiB floor.
		{proto.Simple, 1024, 1, 4, 4, 3, 32 << 10},
		// LL128, 8 ranks on 8 hosts: ppn 1, nsteps 1+3+0.1 = 4.1; wire step
		// 614400: rule 1 needs bytes/chunk >= 262.4 -> halves while > 128K:
		// 307200, 153600, 76800; rule 2 needs >= 65.6: 1 MiB/76800 = 13 ->
		// 38400 -> 19200 (<= 32K stops). Payload 19200/128*120 = 18000,
		// rounded down to the 1920 B grain: 17280.
		{proto.LL128, 1 << 20, 1, 8, 8, 6, 17280},
		// LL keeps its step: 64 KiB wire, 32 KiB payload.
		{proto.LL, 64, 1, 8, 8, 6, 32 << 10},
	}
	for _, c := range cases {
		got := algo.TreeChunkBytes(c.p, b[c.p], c.bytes, c.nCh, c.nRanks, c.nHosts, c.depth)
		if got != c.want {
			t.Errorf("%s %d B nch=%d n=%d hosts=%d depth=%d: chunk %d, want %d", c.p, c.bytes, c.nCh, c.nRanks, c.nHosts, c.depth, got, c.want)
		}
	}
}

// Exhaustive properties: the chunk is a positive multiple of the grain, at
// most one step, and never grows when the message shrinks.
func TestTreeChunkBytesProperties(t *testing.T) {
	b := proto.DefaultBuffSizes()
	for _, p := range proto.All() {
		for _, buff := range []int{b[p], b[p] / 4, 4 * b[p]} {
			for hosts := 1; hosts <= 16; hosts++ {
				for ppn := 1; ppn <= 4; ppn++ {
					for nch := 1; nch <= 4; nch++ {
						prev := 1 << 62
						for bytes := int64(1) << 34; bytes >= 1; bytes /= 3 {
							got := algo.TreeChunkBytes(p, buff, bytes, nch, hosts*ppn, hosts, hosts+ppn)
							limit := max(p.StepData(buff), p.Grain())
							if p == proto.Simple {
								limit = buff / proto.Steps
							}
							if got <= 0 || got%p.Grain() != 0 || got > limit || got > prev {
								t.Fatalf("%s buff=%d hosts=%d ppn=%d nch=%d bytes=%d: chunk %d (limit %d, previous %d)", p, buff, hosts, ppn, nch, bytes, got, limit, prev)
							}
							prev = got
						}
					}
				}
			}
		}
	}
}
