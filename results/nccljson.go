package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The JSON document that nccl-tests 2.19+ writes with -J (its src/util.cu),
// and that NCCLJSONWriter writes in turn:
//
//	{"version":3, "start_time":"2006-01-02 15:04:05", "args":[...], "env":["K=V",...],
//	 "nccl_version":22809,
//	 "config":{"nthreads","ngpus","minimum_bytes","maximum_bytes","step_factor"|"step_bytes",
//	           "warmup_iters","iterations","aggregated_iterations","validation","graph",
//	           "blocking_collectives","per_iter_timing","per_iter_skip","parallel_init",
//	           "devices":[{"rank","group","pid","hostname","device","device_hex","device_info"}]},
//	 "results":[{"size","count","type","redop","root":"    -1",
//	             "out_of_place":{"time","alg_bw","bus_bw","nwrong"}, "out_of_place_per_iter":{...},
//	             "in_place":{...}, "in_place_per_iter":{...},
//	             "actual_iterations","experiment_name"}, ...],
//	 "out_of_bounds":{"count","okay"}, "average_bus_bandwidth":{"bandwidth","okay"},
//	 "end_time":"..."}
//
// nccl-tests writes booleans as the strings "true"/"false", doubles with
// "%lf" and NaN as "nan"; "devices" has one entry per process (its first
// rank); "time" is "cpu_time" under -C. The reader accepts all of that.

// NCCLJSONVersion is the newest nccl-tests -J version this package reads, and
// the version NCCLJSONWriter writes.
const NCCLJSONVersion = 3

// ncclTimeLayout is nccl-tests' start_time / end_time format (local time).
const ncclTimeLayout = "2006-01-02 15:04:05"

// jsonFloat is a double as nccl-tests writes it: a number, or "nan" (and we
// add "inf", "-inf") for non-finite values, which JSON numbers cannot hold.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"nan"`), nil
	case math.IsInf(v, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-inf"`), nil
	}
	return json.Marshal(v)
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(b)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64) // "nan", "inf" parse too
	if err != nil {
		return fmt.Errorf("not a number: %s", b)
	}
	*f = jsonFloat(v)
	return nil
}

// jsonBool is a boolean: we write true/false; nccl-tests writes the strings
// "true"/"false". Anything else ("unchecked", null) reads as false.
type jsonBool bool

func (v *jsonBool) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(bytes.TrimSpace(b)), `"`)
	*v = jsonBool(s == "true")
	return nil
}

// jsonInt is an integer that nccl-tests may write as a padded string (root
// is sprintf("%6i")) or as a number.
type jsonInt int64

func (v *jsonInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	s := strings.TrimSpace(strings.Trim(string(b), `"`))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) {
			return fmt.Errorf("not an integer: %s", b)
		}
		n = int64(f)
	}
	*v = jsonInt(n)
	return nil
}

// Document pieces, shared by reader and writer. Field order is nccl-tests'.

type ncclConfigJSON struct {
	NThreads      int              `json:"nthreads"`
	NGPUs         int              `json:"ngpus"`
	MinBytes      int64            `json:"minimum_bytes"`
	MaxBytes      int64            `json:"maximum_bytes"`
	StepFactor    *int64           `json:"step_factor,omitempty"`
	StepBytes     *int64           `json:"step_bytes,omitempty"`
	WarmupIters   int              `json:"warmup_iters"`
	Iterations    int              `json:"iterations"`
	AggIters      int              `json:"aggregated_iterations"`
	Validation    int              `json:"validation"`
	Graph         int              `json:"graph"`
	Blocking      jsonBool         `json:"blocking_collectives"`
	PerIterTiming jsonBool         `json:"per_iter_timing"`
	PerIterSkip   int              `json:"per_iter_skip"`
	ParallelInit  jsonBool         `json:"parallel_init"`
	Devices       []ncclDeviceJSON `json:"devices"`
}

type ncclDeviceJSON struct {
	Rank       int    `json:"rank"`
	Group      int    `json:"group"`
	Pid        int    `json:"pid"`
	Hostname   string `json:"hostname"`
	Device     int    `json:"device"`
	DeviceHex  string `json:"device_hex"`
	DeviceInfo string `json:"device_info"`
}

type ncclRowJSON struct {
	Size              int64            `json:"size"`
	Count             int64            `json:"count"`
	Type              string           `json:"type"`
	RedOp             string           `json:"redop"`
	Root              json.RawMessage  `json:"root"` // "%6i" string; a number is accepted
	OutOfPlace        *ncclPlaceJSON   `json:"out_of_place"`
	OutOfPlacePerIter *ncclPerIterJSON `json:"out_of_place_per_iter,omitempty"`
	InPlace           *ncclPlaceJSON   `json:"in_place"`
	InPlacePerIter    *ncclPerIterJSON `json:"in_place_per_iter,omitempty"`
	ActualIterations  *int             `json:"actual_iterations"` // nil: absent (older nccl-tests), config.iterations applies
	ExperimentName    string           `json:"experiment_name"`
}

type ncclPlaceJSON struct {
	Time    *jsonFloat `json:"time,omitempty"`
	CPUTime *jsonFloat `json:"cpu_time,omitempty"` // nccl-tests -C
	AlgBw   jsonFloat  `json:"alg_bw"`
	BusBw   jsonFloat  `json:"bus_bw"`
	NWrong  *jsonFloat `json:"nwrong"` // null: not checked
}

// ncclPerIterJSON: zero statistics are unknown and left out when writing.
type ncclPerIterJSON struct {
	Skipped int         `json:"skipped_iterations"`
	MinUs   jsonFloat   `json:"min_us,omitempty"`
	MaxUs   jsonFloat   `json:"max_us,omitempty"`
	AvgUs   jsonFloat   `json:"avg_us,omitempty"`
	P50Us   jsonFloat   `json:"p50_us,omitempty"`
	P95Us   jsonFloat   `json:"p95_us,omitempty"`
	P99Us   jsonFloat   `json:"p99_us,omitempty"`
	StdevUs jsonFloat   `json:"stdev_us,omitempty"`
	CVPct   jsonFloat   `json:"cv_pct,omitempty"`
	TimesUs []jsonFloat `json:"times_us,omitempty"`
}

type ncclCheckJSON struct {
	Count int      `json:"count"`
	Okay  jsonBool `json:"okay"`
}

type ncclAvgBwJSON struct {
	Bandwidth jsonFloat `json:"bandwidth"`
	Okay      *bool     `json:"okay"` // null: not checked (nccl-tests: "unchecked")
}
