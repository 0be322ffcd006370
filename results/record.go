// Package results holds the machine-readable result records of the harness:
// one versioned schema, writers and readers for our JSONL and CSV, for
// nccl-tests' -J JSON (version 3) and for nccl-tests' text output, and a
// reader for Go benchmark output (go test -bench).
package results

import "time"

// SchemaVersion is the version of Record. Readers accept this version and
// refuse newer ones with a clear error.
const SchemaVersion = 1

// Placement names where the output buffer is.
const (
	OutOfPlace = "out-of-place"
	InPlace    = "in-place"
)

// Record is one measurement: one (configuration, size, placement) of one run.
// Fields that a source does not know are left zero (omitted in JSON).
type Record struct {
	Schema int `json:"schema"` // SchemaVersion

	// Provenance.
	Tool      string    `json:"tool"`              // "gccl 0.1.0" or "nccl-tests 2.19.6"
	GitRev    string    `json:"git_rev,omitempty"` // revision the tool was built from
	Timestamp time.Time `json:"timestamp"`         // when the run started
	Host      string    `json:"host,omitempty"`    // hostname
	CPU       string    `json:"cpu,omitempty"`     // CPU model
	Cores     int       `json:"cores,omitempty"`   // logical CPUs
	GoVersion string    `json:"go_version,omitempty"`
	Backend   string    `json:"backend"` // "embedded", "nccl"; "nccl-tests" or BackendGoBench for imported results
	// NCCLVersion and CUDAVersion name the libraries the NCCL backend
	// loaded ("2.28.9", "13.0").
	NCCLVersion string `json:"nccl_version,omitempty"`
	CUDAVersion string `json:"cuda_version,omitempty"`
	// GraphLaunches is -G (CUDA graph launches per measurement): NCCL
	// backend only. Register is -R (1 local, 2 symmetric buffer
	// registration); on the embedded backend only 2 (symmetric windows).
	GraphLaunches int    `json:"graph_launches,omitempty"`
	Register      int    `json:"register,omitempty"`
	Source        string `json:"source,omitempty"` // file:line an imported record came from

	// Topology.
	NRanks int `json:"nranks"`
	NProcs int `json:"nprocs,omitempty"`
	NHosts int `json:"nhosts,omitempty"`
	// RanksPerProc is each process's ranks (-t x -g); Launcher what
	// started the processes: "openmpi", "slurm", "pmi", "torchrun",
	// "gccl" (--np), or "" for one process started on its own.
	RanksPerProc int    `json:"ranks_per_proc,omitempty"`
	Launcher     string `json:"launcher,omitempty"`

	// What ran.
	Collective string `json:"collective"` // allreduce, allgather, ..., sendrecv, hypercube
	Type       string `json:"type"`       // nccl-tests' type names: float, half, int32, ...
	Op         string `json:"op"`         // sum, prod, max, min, avg, premulsum; "none" for non-reducing
	Root       int    `json:"root"`       // -1 when the collective has no root

	// Configuration: requested ("auto" when the stack chose) and chosen.
	Algorithm   string `json:"algorithm"`                 // requested: Ring, Tree, auto
	Protocol    string `json:"protocol"`                  // requested: LL, LL128, Simple, auto
	Channels    int    `json:"channels"`                  // requested; 0 = auto
	BuffSize    int64  `json:"buffsize,omitempty"`        // requested Simple buffer bytes; 0 = default
	ChosenAlgo  string `json:"chosen_algo,omitempty"`     // what the stack ran
	ChosenProto string `json:"chosen_proto,omitempty"`    //
	ChosenCh    int    `json:"chosen_channels,omitempty"` //
	ChosenBuff  int64  `json:"chosen_buffsize,omitempty"` //
	// ChosenBy says who chose: forced, table, model (ccl.Choice.Source).
	ChosenBy string `json:"chosen_by,omitempty"`
	// PredictedUs is the stack's cost-model time for the chosen config.
	PredictedUs float64 `json:"predicted_us,omitempty"`
	// DeviceImpl names the device kernel that ran instead of the stack's
	// collective (perf -D on the embedded backend: "lsa-D1", "lsa-D2"),
	// DeviceCTAs its coops per rank (-V), DeviceCoops the coops each rank
	// ran (the LSA kernels run no more than every rank's processors run at
	// once); empty and 0 for the collective.
	DeviceImpl  string `json:"device_impl,omitempty"`
	DeviceCTAs  int    `json:"device_ctas,omitempty"`
	DeviceCoops int    `json:"device_coops,omitempty"`

	// The measurement.
	Placement  string  `json:"placement"` // OutOfPlace or InPlace
	Size       int64   `json:"size"`      // bytes, as nccl-tests' size column
	Count      int64   `json:"count"`     // elements, as nccl-tests' count column
	Iterations int     `json:"iterations"`
	AggIters   int     `json:"agg_iters,omitempty"`
	TimeUs     float64 `json:"time_us"`             // the reported time: mean per op, combined over ranks by -a
	MedianUs   float64 `json:"median_us,omitempty"` // per-iteration statistics, when measured
	MinUs      float64 `json:"min_us,omitempty"`
	MaxUs      float64 `json:"max_us,omitempty"`
	P99Us      float64 `json:"p99_us,omitempty"`
	AlgBw      float64 `json:"algbw_gbps"` // GB/s, GB = 1e9
	BusBw      float64 `json:"busbw_gbps"`
	// Wrong is the number of mismatched elements; -1 when not checked (N/A).
	Wrong int64 `json:"wrong"`
	// IterTimesUs holds per-iteration times when they were recorded (-I).
	IterTimesUs []float64 `json:"iter_times_us,omitempty"`
	// StopReason says why iterations stopped when they adapt: "precision" or "time-cap".
	StopReason string `json:"stop_reason,omitempty"`
	// Interleaved says the configuration was measured side by side with
	// the run's others on one set of communicators (perf --interleave).
	Interleaved bool `json:"interleaved,omitempty"`

	// RefCopyGBps is single-goroutine copy() bandwidth measured once at start
	// on this machine, so results can be normalised across machines.
	RefCopyGBps float64 `json:"ref_copy_gbps,omitempty"`
	// Env holds the recorded variables (KeepEnv: an allow-list of GCCL_*, NCCL_*
	// but NCCL_COMM_ID, no credential-like names), never the whole environment.
	Env map[string]string `json:"env,omitempty"`
}
