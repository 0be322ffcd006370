package nccl

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestResultName pins ncclResult_t's names (nccl.h): they stand in for
// ncclGetErrorString before the library is loaded, so a shifted name
// would blame the wrong failure.
func TestResultName(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{
		{0, "ncclSuccess"},
		{1, "ncclUnhandledCudaError"},
		{2, "ncclSystemError"},
		{3, "ncclInternalError"},
		{4, "ncclInvalidArgument"},
		{5, "ncclInvalidUsage"},
		{6, "ncclRemoteError"},
		{7, "ncclInProgress"},
		{8, "ncclTimeout"},
		// Out of range: a code from a newer NCCL, or garbage; named by
		// number rather than panicking.
		{9, "ncclResult(9)"},
		{42, "ncclResult(42)"},
		{-1, "ncclResult(-1)"},
	}
	for _, tt := range tests {
		if got := ResultName(tt.code); got != tt.want {
			t.Errorf("ResultName(%d) = %q, want %q", tt.code, got, tt.want)
		}
	}
}

// TestErrorMessage: a failed call's message names the call and what the
// library said; for NCCL also ncclResult_t's name and ncclGetLastError's
// detail, for CUDA the numeric cudaError_t.
func TestErrorMessage(t *testing.T) {
	tests := []struct {
		name    string
		err     *Error
		want    []string
		notWant []string
	}{
		{
			name: "nccl with detail",
			err:  &Error{Call: "ncclAllReduce", Lib: "NCCL", Code: 4, Text: "invalid argument", Detail: "AllReduce: invalid root 9"},
			want: []string{"ncclAllReduce", "ncclInvalidArgument", "invalid argument", "AllReduce: invalid root 9"},
		},
		{
			name:    "nccl without detail",
			err:     &Error{Call: "ncclCommInitRankConfig(rank 1 of 8)", Lib: "NCCL", Code: 2, Text: "unhandled system error"},
			want:    []string{"ncclCommInitRankConfig(rank 1 of 8)", "ncclSystemError", "unhandled system error"},
			notWant: []string{": :", "()"},
		},
		{
			name: "nccl out-of-range code",
			err:  &Error{Call: "ncclGroupEnd", Lib: "NCCL", Code: 17, Text: "unknown result code"},
			want: []string{"ncclGroupEnd", "ncclResult(17)", "unknown result code"},
		},
		{
			name: "cuda",
			err:  &Error{Call: "cudaMalloc(1073741824 bytes)", Lib: "CUDA", Code: 2, Text: "out of memory"},
			want: []string{"cudaMalloc(1073741824 bytes)", "CUDA error 2", "out of memory"},
			// NCCL's names do not describe CUDA's codes.
			notWant: []string{"ncclSystemError"},
		},
		{
			name:    "cuda without text",
			err:     &Error{Call: "cudaSetDevice(3)", Lib: "CUDA", Code: 101},
			want:    []string{"cudaSetDevice(3)", "CUDA error 101"},
			notWant: []string{": :"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.err.Error()
			checkMessage(t, msg, tt.want, tt.notWant)
			if strings.HasSuffix(msg, ": ") || strings.HasSuffix(msg, " ") {
				t.Errorf("Error() = %q ends in a dangling separator", msg)
			}
		})
	}
}

// TestErrorExact pins the two formats once, whole, so a reword is a
// deliberate change.
func TestErrorExact(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Call: "ncclAllReduce", Lib: "NCCL", Code: 5, Text: "invalid usage", Detail: "bad comm"},
			"ncclAllReduce failed: ncclInvalidUsage (invalid usage): bad comm"},
		{&Error{Call: "cudaFree", Lib: "CUDA", Code: 1, Text: "invalid argument"},
			"cudaFree failed: CUDA error 1: invalid argument"},
		{&Error{Call: "cudaFree", Lib: "CUDA", Code: 1},
			"cudaFree failed: CUDA error 1"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestErrorAs: callers find the code through a wrapped error.
func TestErrorAs(t *testing.T) {
	err := fmt.Errorf("rank 3: %w", &Error{Call: "ncclSend", Lib: "NCCL", Code: 6})
	var e *Error
	if !errors.As(err, &e) || e.Code != 6 || e.Call != "ncclSend" {
		t.Errorf("errors.As(%v) = %+v", err, e)
	}
}

// checkMessage fails t unless msg holds every want and none of notWant.
func checkMessage(t *testing.T, msg string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("Error() = %q, lacks %q", msg, w)
		}
	}
	for _, w := range notWant {
		if strings.Contains(msg, w) {
			t.Errorf("Error() = %q, has %q", msg, w)
		}
	}
}
