package nccl

import "fmt"

// ncclResult_t names (nccl.h), for errors where ncclGetErrorString is not
// loaded yet.
var resultNames = []string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"}

// ResultName names an ncclResult_t.
func ResultName(code int) string {
	if code >= 0 && code < len(resultNames) {
		return resultNames[code]
	}
	return fmt.Sprintf("ncclResult(%d)", code)
}

// Error is a failed CUDA or NCCL call: which call, its code and the
// library's text for it (and, for NCCL, ncclGetLastError's detail).
type Error struct {
	Call   string // "ncclAllReduce", "cudaMalloc(1073741824 bytes)"
	Lib    string // "NCCL" or "CUDA"
	Code   int
	Text   string // ncclGetErrorString / cudaGetErrorString
	Detail string // ncclGetLastError, when it says more
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s failed: %s error %d", e.Call, e.Lib, e.Code)
	if e.Lib == "NCCL" {
		s = fmt.Sprintf("%s failed: %s (%s)", e.Call, ResultName(e.Code), e.Text)
	} else if e.Text != "" {
		s += ": " + e.Text
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}
