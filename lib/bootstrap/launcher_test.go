package bootstrap

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// env is a lookup over a map, as os.LookupEnv over an environment.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDetectLaunchers(t *testing.T) {
	for _, c := range []struct {
		name string
		env  func(string) (string, bool)
		want Launch
	}{
		{"alone", env(), Launch{Size: 1, LocalRank: -1}},
		{"alone with a root", env("GCCL_COMM_ID", "10.1.2.3:29500"),
			Launch{Size: 1, LocalRank: -1, Root: "10.1.2.3:29500", RootFrom: EnvCommID}},
		{"openmpi one host", env("OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_RANK", "2",
			"OMPI_COMM_WORLD_LOCAL_SIZE", "4", "OMPI_MCA_ess_base_jobid", "123"),
			Launch{Launcher: "openmpi", Rank: 2, Size: 4, LocalRank: 2, JobID: "OMPI_MCA_ess_base_jobid=123"}},
		{"slurm with GCCL_COMM_ID", env("SLURM_PROCID", "5", "SLURM_NTASKS", "16", "SLURM_LOCALID", "1", "SLURM_JOB_ID", "77",
			"SLURM_STEP_ID", "0", "GCCL_COMM_ID", "node1:40000"),
			Launch{Launcher: "slurm", Rank: 5, Size: 16, LocalRank: 1, JobID: "SLURM_JOB_ID=77,SLURM_STEP_ID=0", Root: "node1:40000", RootFrom: EnvCommID}},
		{"mpich hydra", env("PMI_RANK", "1", "PMI_SIZE", "2", "MPI_LOCALRANKID", "1", "MPI_LOCALNRANKS", "2", "PMI_KVSNAME", "kvs_42"),
			Launch{Launcher: "pmi", Rank: 1, Size: 2, LocalRank: 1, JobID: "PMI_KVSNAME=kvs_42"}},
		{"torchrun", env("RANK", "3", "WORLD_SIZE", "8", "LOCAL_RANK", "3", "MASTER_ADDR", "::1", "MASTER_PORT", "29500", "TORCHELASTIC_RUN_ID", "r1"),
			Launch{Launcher: "torchrun", Rank: 3, Size: 8, LocalRank: 3, JobID: "TORCHELASTIC_RUN_ID=r1", Root: "[::1]:29500", RootFrom: "MASTER_ADDR/MASTER_PORT"}},
		{"openmpi under slurm: openmpi's own ranks", env("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "SLURM_PROCID", "0", "SLURM_NTASKS", "1",
			"GCCL_COMM_ID", "h:1"),
			Launch{Launcher: "openmpi", Rank: 0, Size: 2, LocalRank: -1, Root: "h:1", RootFrom: EnvCommID}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Detect(c.env)
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if want.Root == "" && want.JobID != "" && want.Size > 1 { // a port derived from the job id
				want.Root = "127.0.0.1:" + strconv.Itoa(DerivedPort(want.JobID))
				want.RootFrom = got.RootFrom
				if !strings.Contains(got.RootFrom, want.JobID) {
					t.Errorf("RootFrom %q does not name the job id", got.RootFrom)
				}
			}
			if got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(n)) }

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// Several processes and no way to meet is an error saying what to set,
// never N one-process jobs; so are invalid values.
func TestDetectErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		env  func(string) (string, bool)
		want []string
	}{
		{"no job id", env("PMI_RANK", "0", "PMI_SIZE", "4"), []string{"no way to rendezvous", "pmi says 4 processes", "GCCL_COMM_ID=host:port"}},
		{"maybe several hosts", env("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_LOCALID", "0", "SLURM_JOB_ID", "9", "SLURM_NTASKS_PER_NODE", "2"),
			[]string{"possibly on several hosts", "GCCL_SINGLE_HOST=1"}},
		{"rank past size", env("OMPI_COMM_WORLD_RANK", "4", "OMPI_COMM_WORLD_SIZE", "4"), []string{"openmpi", `OMPI_COMM_WORLD_RANK="4"`, "0 to size-1"}},
		{"bad size", env("RANK", "0", "WORLD_SIZE", "many"), []string{"torchrun", `WORLD_SIZE="many"`}},
		{"bad comm id", env("GCCL_COMM_ID", "nohost"), []string{"GCCL_COMM_ID", "host:port"}},
		{"bad port", env("GCCL_COMM_ID", "h:70000"), []string{"GCCL_COMM_ID", "1 to 65535"}},
		{"master addr alone", env("MASTER_ADDR", "h"), []string{"MASTER_ADDR and MASTER_PORT must be set together"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Detect(c.env)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	_, err := Detect(env("PMI_RANK", "0", "PMI_SIZE", "4"))
	if !errors.Is(err, ErrNoRendezvous) {
		t.Errorf("%v is not ErrNoRendezvous", err)
	}
	// Every process on this host, said: the derived local port.
	l, err := Detect(env("SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_LOCALID", "0", "SLURM_JOB_ID", "9", "GCCL_SINGLE_HOST", "1"))
	if err != nil || !strings.HasPrefix(l.Root, "127.0.0.1:") {
		t.Errorf("GCCL_SINGLE_HOST=1: %+v %v", l, err)
	}
}

func TestDerivedPort(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 1000; i++ {
		p := DerivedPort("SLURM_JOB_ID=" + strconv.Itoa(i))
		if p < 20000 || p >= 60000 {
			t.Fatalf("port %d out of [20000, 60000)", p)
		}
		seen[p] = true
	}
	if len(seen) < 950 {
		t.Errorf("1000 job ids gave only %d ports", len(seen))
	}
	if DerivedPort("a") != DerivedPort("a") {
		t.Error("not a function of the job id")
	}
}
