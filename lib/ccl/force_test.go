package ccl

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/tuning"
)

// Force switches the configuration per operation on one communicator:
// every combination, in a shuffled order and twice over, runs what was
// forced and gets the exact result.
func TestForceSwitchesPerOperation(t *testing.T) {
	comms := initT(t, 3, Config{MaxNChannels: 3})
	type cfg struct {
		algo, proto string
		nch         int
	}
	var cfgs []cfg
	for _, a := range []string{"Ring", "Tree"} {
		for _, p := range []string{"LL", "LL128", "Simple"} {
			for nch := 1; nch <= 3; nch++ {
				cfgs = append(cfgs, cfg{a, p, nch})
			}
		}
	}
	cfgs = append(cfgs, cfgs...)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(cfgs), func(i, j int) { cfgs[i], cfgs[j] = cfgs[j], cfgs[i] })
	for i, f := range cfgs {
		for _, c := range comms {
			if err := c.Force(Forced{Algo: algoReq(f.algo), Proto: protoReq(f.proto), NChannels: f.nch}); err != nil {
				t.Fatal(err)
			}
		}
		count := []int{1, 3000, 70_000}[i%3]
		ch := allReduceChoice(t, comms, count)
		if ch.Algo != f.algo || ch.Proto != f.proto || ch.Source != "forced" || ch.NChannels < 1 || ch.NChannels > f.nch {
			t.Fatalf("forced %+v, count %d: ran %+v", f, count, ch)
		}
	}
}

// Force with nothing forced hands the choice back to the model, within
// MaxNChannels; a later Force with the communicator's own settings
// restores them. The model is given a core per channel and no host cap, so
// that every channel it may use pays.
func TestForceAutoAndChannelCap(t *testing.T) {
	model := filepath.Join(t.TempDir(), "model.json")
	if err := os.WriteFile(model, []byte(`{"version": 1, "cores": 64, "max_host_bw_gbs": 0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	comms := initT(t, 2, Config{MaxNChannels: 4, Proto: protoReq("Simple"), Algo: algoReq("Ring"), ModelFile: model})
	force := func(f Forced) {
		for _, c := range comms {
			if err := c.Force(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	big := 1 << 20
	if ch := allReduceChoice(t, comms, big); ch.NChannels != 4 || ch.Proto != "Simple" || ch.Source != "forced+model" {
		t.Fatalf("Config's settings: ran %+v, want Simple on 4 channels", ch)
	}
	force(Forced{MaxNChannels: 1})
	if ch := allReduceChoice(t, comms, big); ch.NChannels != 1 || ch.Source != "model" {
		t.Fatalf("auto capped at 1 channel: ran %+v", ch)
	}
	force(Forced{Algo: algoReq("Ring"), Proto: protoReq("LL"), MaxNChannels: 2}) // the ring: LL alone may price the one-shot lower
	if ch := allReduceChoice(t, comms, big); ch.NChannels != 2 || ch.Proto != "LL" || ch.Algo != "Ring" || ch.Source != "forced+model" {
		t.Fatalf("LL capped at 2 channels: ran %+v", ch)
	}
}

func TestForceErrors(t *testing.T) {
	comms := initT(t, 2, Config{NChannels: 2})
	c := comms[0]
	for _, tc := range []struct {
		f    Forced
		want string
	}{
		{Forced{Proto: tuning.ForceProto(-1)}, "Force: unknown protocol Protocol(-1)"},
		{Forced{Algo: tuning.ForceAlgo(tuning.NumAlgos)}, "Force: unknown algorithm Algo(4)"},
		{Forced{NChannels: 3}, "NChannels 3 is out of range: want 1..2"},
		{Forced{NChannels: -1}, "NChannels -1 is out of range"},
		{Forced{MaxNChannels: 5}, "MaxNChannels 5 is out of range: want 1..2"},
		{Forced{NChannels: 2, MaxNChannels: 1}, "MaxNChannels 1 is below NChannels 2"},
	} {
		err := c.Force(tc.f)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Force(%+v) = %v, want an error containing %q", tc.f, err, tc.want)
		}
	}
	if err := c.GroupStart(); err != nil {
		t.Fatal(err)
	}
	if err := c.Force(Forced{}); err == nil || !strings.Contains(err.Error(), "inside a group") {
		t.Errorf("Force inside a group = %v, want an error", err)
	}
	if err := c.GroupEnd(); err != nil {
		t.Fatal(err)
	}
	// Tree on a collective without one fails at the call, naming Force.
	for _, c := range comms {
		if err := c.Force(Forced{Algo: algoReq("Tree")}); err != nil {
			t.Fatal(err)
		}
	}
	in, out := make([]byte, 8), make([]byte, 16)
	if err := c.AllGather(in, out, 2, Float32); err == nil || !strings.Contains(err.Error(), "Comm.Force") {
		t.Errorf("allgather with Tree forced = %v, want an error naming Comm.Force", err)
	}
	d := comms[1]
	d.Destroy()
	if err := d.Force(Forced{}); err == nil {
		t.Error("Force after Destroy succeeded")
	}
}

func TestConfigMaxNChannels(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxNChannels: 65}, "MaxNChannels 65 is out of range"},
		{Config{MaxNChannels: -1}, "MaxNChannels -1 is out of range"},
		{Config{MaxNChannels: 2, NChannels: 3}, "MaxNChannels 2 is below NChannels 3"},
	} {
		if _, err := InitAll(2, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("InitAll(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	comms := initT(t, 2, Config{MaxNChannels: 3, NChannels: 1})
	if got := len(comms[0].channels); got != 3 {
		t.Errorf("MaxNChannels 3: started %d channels", got)
	}
	if ch := allReduceChoice(t, comms, 1<<20); ch.NChannels != 1 {
		t.Errorf("NChannels 1 of 3 started: ran %+v", ch)
	}
	c, err := Config{}.FromLookup(func(k string) (string, bool) {
		if k == EnvMaxNChannels {
			return "5", true
		}
		return "", false
	})
	if err != nil || c.MaxNChannels != 5 {
		t.Errorf("GCCL_MAX_NCHANNELS=5: %+v, %v", c, err)
	}
	if _, err := (Config{}).FromLookup(func(k string) (string, bool) { return "0", k == EnvMaxNChannels }); err == nil || !strings.Contains(err.Error(), "GCCL_MAX_NCHANNELS") {
		t.Errorf("GCCL_MAX_NCHANNELS=0: %v, want an error naming it", err)
	}
}

// Point-to-point operations obey Force's protocol and channel count too.
func TestForceP2P(t *testing.T) {
	comms := initT(t, 2, Config{MaxNChannels: 3})
	for _, tc := range []struct {
		f     Forced
		proto string
		nch   int
	}{
		{Forced{Proto: protoReq("LL"), NChannels: 2}, "LL", 2},
		{Forced{Proto: protoReq("Simple"), NChannels: 1}, "Simple", 1},
		{Forced{Proto: protoReq("LL128"), NChannels: 3}, "LL128", 3},
		{Forced{MaxNChannels: 1}, "", 1},
		{Forced{}, "", 3},
	} {
		count := 5000
		perRank(comms, func(c *Comm) {
			if err := c.Force(tc.f); err != nil {
				t.Error(err)
				return
			}
			peer := 1 - c.Rank()
			send, recv := make([]byte, 4*count), make([]byte, 4*count)
			for i := range send {
				send[i] = byte(c.Rank()*7 + i)
			}
			if err := c.GroupStart(); err != nil {
				t.Error(err)
				return
			}
			c.Send(send, count, Float32, peer)
			c.Recv(recv, count, Float32, peer)
			if err := c.GroupEnd(); err != nil {
				t.Error(err)
				return
			}
			if err := c.Synchronize(); err != nil {
				t.Error(err)
				return
			}
			for i := range recv {
				if recv[i] != byte(peer*7+i) {
					t.Errorf("%+v: rank %d byte %d wrong", tc.f, c.Rank(), i)
					return
				}
			}
		})
		ch := comms[0].LastChoice()
		if ch.Algo != "P2P" || ch.NChannels != tc.nch || (tc.proto != "" && ch.Proto != tc.proto) {
			t.Errorf("%+v: ran %+v, want %s on %d channels", tc.f, ch, tc.proto, tc.nch)
		}
	}
}
