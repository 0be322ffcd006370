package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/bootstrap"
	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/shm"
)

func TestKeepEnv(t *testing.T) {
	for _, tc := range []struct {
		key  string
		keep bool
	}{
		{"GCCL_PROTO", true},
		{"GCCL_NCHANNELS", true},
		{"GCCL_SOCKET_IFNAME", true},
		{"NCCL_ALGO", true},
		{"NCCL_IB_HCA", true},
		{"NCCL_TESTS_MIN_BW", true},
		// The job's identity and secrets.
		{"GCCL_JOB_TOKEN", false},
		{"GCCL_COMM_ID", false},
		{"GCCL_LAUNCH_JOBID", false},
		{"GCCL_LAUNCH_RANK", false},
		{"GCCL_LAUNCH_SIZE", false},
		{"GCCL_LAUNCH_LOCAL_RANK", false},
		{"NCCL_COMM_ID", false},
		// Credential-like names under either prefix.
		{"NCCL_IB_SECRET", false},
		{"NCCL_FOO_TOKEN", false},
		{"GCCL_API_KEY", false},
		{"NCCL_PASSWORD", false},
		{"nccl_lower_token", false},
		// Unknown gccl names, and everything else.
		{"GCCL_PERFTEST_MARKER", false},
		{"GCCL_TEST_DIE_RANK", false},
		{"AWS_SECRET_ACCESS_KEY", false},
		{"GITHUB_TOKEN", false},
		{"OMPI_MCA_ess_base_jobid", false},
		{"SLURM_JOB_ID", false},
		{"PATH", false},
		{"MY_NCCL_ALGO", false},
		{"", false},
	} {
		if got := KeepEnv(tc.key); got != tc.keep {
			t.Errorf("KeepEnv(%q) = %v, want %v", tc.key, got, tc.keep)
		}
	}
}

// TestRecordedCoversConfig: every variable that steers the stack's
// configuration is recorded, and no launcher or bootstrap variable is.
func TestRecordedCoversConfig(t *testing.T) {
	for _, k := range append([]string{ccl.EnvTimeout, ccl.EnvRanksPerHost, ccl.EnvDebug, ccl.EnvDirectDisable, ccl.EnvLLBuffSize,
		ccl.EnvLL128BuffSize, ccl.EnvSocketIfname, ccl.EnvNetSpin, ccl.EnvNSocks, ccl.EnvNSocksThreads, ccl.EnvHostID, shm.EnvDir,
		bootstrap.EnvSingleHost}, ccl.ChoiceEnv...) {
		if !KeepEnv(k) {
			t.Errorf("%s changes what runs but is not recorded", k)
		}
	}
	for _, k := range append([]string{bootstrap.EnvJobToken, bootstrap.EnvCommID, bootstrap.EnvMasterAddr, bootstrap.EnvMasterPort},
		bootstrap.LauncherVariables()...) {
		if KeepEnv(k) {
			t.Errorf("%s names the job, not its configuration, yet is recorded", k)
		}
	}
}

// TestReadersDropSecrets: a file written before the allow-list (the
// token and the launcher's job id in its env) loses them when read, in
// every format that carries an environment.
func TestReadersDropSecrets(t *testing.T) {
	const secret = "a51570bee5f59fee0"
	jsonl := `{"schema":1,"tool":"gccl 0.1.0","timestamp":"2025-06-01T10:20:30Z","backend":"embedded","nranks":2,` +
		`"collective":"allreduce","type":"float","op":"sum","root":-1,"algorithm":"auto","protocol":"auto","channels":0,` +
		`"placement":"out-of-place","size":8,"count":2,"iterations":5,"time_us":1,"algbw_gbps":0,"busbw_gbps":0,"wrong":0,` +
		`"env":{"GCCL_JOB_TOKEN":"` + secret + `","GCCL_LAUNCH_JOBID":"13427-` + secret + `","GCCL_COMM_ID":"127.0.0.1:1","GCCL_PROTO":"LL"}}` + "\n"
	recs, err := Read("old.jsonl", strings.NewReader(jsonl))
	if err != nil || len(recs) != 1 {
		t.Fatalf("read %d records, %v", len(recs), err)
	}
	if got := recs[0].Env; len(got) != 1 || got["GCCL_PROTO"] != "LL" {
		t.Errorf("env read back as %v, want only GCCL_PROTO=LL", got)
	}
	// Written again in every format: nothing of the secret.
	var b bytes.Buffer
	w := NewJSONLWriter(&b)
	rec := recs[0]
	rec.Env = map[string]string{"GCCL_JOB_TOKEN": secret, "GITHUB_TOKEN": secret, "GCCL_PROTO": "LL"}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush()
	cw := NewCSVWriter(&b)
	if err := cw.Write(rec); err != nil {
		t.Fatal(err)
	}
	_ = cw.Flush()
	if err := WriteNCCLJSON(&b, []Record{rec}, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), secret) || strings.Contains(b.String(), "TOKEN") {
		t.Errorf("a writer kept the secret:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "GCCL_PROTO") {
		t.Errorf("the writers dropped the recorded GCCL_PROTO:\n%s", b.String())
	}
	// nccl-tests -J with the whole environment: the same.
	doc := `{"version":3,"args":["all_reduce_perf"],"env":["GCCL_JOB_TOKEN=` + secret + `","NCCL_COMM_ID=10.0.0.1:1","NCCL_PROTO=LL"],` +
		`"config":{"nthreads":1,"ngpus":2},"results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",` +
		`"out_of_place":{"time":1,"alg_bw":0,"bus_bw":0,"nwrong":0},"in_place":{"time":1,"alg_bw":0,"bus_bw":0,"nwrong":0}}]}`
	recs, err = Read("old.json", strings.NewReader(doc))
	if err != nil || len(recs) == 0 {
		t.Fatalf("read %d records of nccl-tests JSON, %v", len(recs), err)
	}
	for _, r := range recs {
		if len(r.Env) != 1 || r.Env["NCCL_PROTO"] != "LL" {
			t.Errorf("nccl-tests JSON env read back as %v, want only NCCL_PROTO=LL", r.Env)
		}
	}
}
