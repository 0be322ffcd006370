package results

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// rec builds a fully populated Record for round trips.
func rec(coll string, size int64, placement string) Record {
	op := "sum"
	if t, ok := testByCollective(coll); ok && !t.reduces {
		op = "none"
	}
	return Record{
		Schema:    SchemaVersion,
		Tool:      "gccl 0.1.0",
		GitRev:    "abc123",
		Timestamp: time.Date(2025, 6, 1, 10, 20, 30, 123456789, time.UTC),
		Host:      "box",
		CPU:       "Intel(R) Xeon(R)",
		Cores:     2,
		GoVersion: "go1.26.8",
		Backend:   "embedded", NCCLVersion: "2.28.3", CUDAVersion: "13.0", GraphLaunches: 10, Register: 1,
		NRanks: 4,
		NProcs: 2, RanksPerProc: 1, Launcher: "openmpi",
		NHosts:      1,
		Collective:  coll,
		Type:        "float",
		Op:          op,
		Root:        -1,
		Algorithm:   "Ring",
		Protocol:    "Simple",
		Channels:    2,
		BuffSize:    4 << 20,
		ChosenAlgo:  "Ring",
		ChosenProto: "Simple",
		ChosenCh:    2,
		ChosenBuff:  4 << 20,
		ChosenBy:    "model",
		PredictedUs: 12.5,
		DeviceImpl:  "lsa-D2",
		DeviceCTAs:  16,
		DeviceCoops: 3,
		Placement:   placement,
		Size:        size,
		Count:       size / 4,
		Iterations:  20,
		AggIters:    1,
		TimeUs:      12.5 + float64(size)/1e3,
		MedianUs:    12.25,
		MinUs:       11.5,
		MaxUs:       14.75,
		P99Us:       14.5,
		AlgBw:       float64(size) / 12.5e3,
		BusBw:       1.5 * float64(size) / 12.5e3,
		Wrong:       0,
		IterTimesUs: []float64{11.5, 12.25, 14.75, 1.0 / 3},
		StopReason:  "precision", Interleaved: true,
		RefCopyGBps: 9.875,
		Env:         map[string]string{"GCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_NOTE": `a;b\c=d`},
	}
}

// sampleRecords: two collectives, two sizes, both placements, one unchecked.
func sampleRecords() []Record {
	var recs []Record
	for _, coll := range []string{"allreduce", "sendrecv"} {
		for _, size := range []int64{1024, 4096} {
			for _, p := range []string{OutOfPlace, InPlace} {
				r := rec(coll, size, p)
				if coll == "sendrecv" && p == InPlace {
					r.Wrong = -1
				}
				recs = append(recs, r)
			}
		}
	}
	recs[1].IterTimesUs = nil // a record without per-iteration times
	return recs
}

// wantErr checks that err is non-nil and mentions every fragment.
func wantErr(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", fragments)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

// wantSyntax checks that err holds a *SyntaxError at file:line.
func wantSyntax(t *testing.T, err error, file string, line int) {
	t.Helper()
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *SyntaxError", err)
	}
	if se.File != file || se.Line != line {
		t.Errorf("error at %s:%d, want %s:%d (%v)", se.File, se.Line, file, line, err)
	}
}
