package perf

import (
	"math"
	"os"
	"strconv"
	"strings"
)

// nccl-tests' alltoallv environment variables.
const (
	envSpread  = "NCCL_TESTS_ALLTOALLV_SPREAD"
	envMatrix  = "NCCL_TESTS_ALLTOALLV_MATRIX_FILE"
	envScale   = "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE"
	envSummary = "NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY"
)

// bindAlltoAllv builds the run's alltoallv test from the environment:
// a generated pattern (NCCL_TESTS_ALLTOALLV_SPREAD) or a traffic matrix
// (NCCL_TESTS_ALLTOALLV_MATRIX_FILE, scaled by _MATRIX_SCALE). nccl-tests
// clamps or ignores a bad value; here it is an error that says what is
// valid, as for every other input.
func bindAlltoAllv(o *Options, n int) (*Test, error) {
	tr, err := trafficFromEnv(os.Getenv, n)
	if err != nil {
		return nil, err
	}
	if tr.matrix != nil {
		if o.MinBytes != o.MaxBytes {
			return nil, usagef("%s: -b and -e must be equal (e.g. -b 32M -e 32M): the matrix sets every size, so there is nothing to sweep (got -b %d -e %d)", envMatrix, o.MinBytes, o.MaxBytes)
		}
		send, recv := tr.totals(0, 1, n)
		if need := max(send, recv); o.MaxBytes < need {
			return nil, usagef("%s: -e must be at least %d bytes, the most any rank sends or receives in the matrix (got %d)", envMatrix, need, o.MaxBytes)
		}
	}
	if v := os.Getenv(envSummary); v != "" && v != "0" {
		o.notes = append(o.notes, envSummary+" ignored: the per-rank summary is not implemented")
	}
	tr.stage = make([][]byte, n)
	return newAlltoAllv(tr), nil
}

// trafficFromEnv reads the traffic pattern of n ranks through getenv.
func trafficFromEnv(getenv func(string) string, n int) (*traffic, error) {
	if path := getenv(envMatrix); path != "" {
		scale := 1.0
		if s := getenv(envScale); s != "" {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, usagef("invalid %s %q: want a number >= 0 (1 keeps the matrix's bytes)", envScale, s)
			}
			scale = v
		}
		m, err := readTrafficMatrix(path, scale)
		if err != nil {
			return nil, err
		}
		if len(m) < n {
			return nil, usagef("%s %s: a %dx%d matrix cannot describe %d ranks: it needs at least %d rows and columns", envMatrix, path, len(m), len(m), n, n)
		}
		rows := make([][]int64, n)
		for i := range rows {
			rows[i] = m[i][:n]
		}
		return &traffic{matrix: rows}, nil
	}
	tr := &traffic{spread: 1}
	if s := getenv(envSpread); s != "" {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return nil, usagef("invalid %s %q: want a number from 0 (uniform) to 1 (distance-weighted, the default)", envSpread, s)
		}
		tr.spread = v
	}
	return tr, nil
}
