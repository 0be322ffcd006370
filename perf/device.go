package perf

import (
	"errors"

	"github.com/gccl/gccl/lib/nccl"
)

// Optional interfaces of a backend's ranks whose buffers live on a device
// (the NCCL backend). The harness keeps building inputs and checking
// outputs in host memory, as nccl-tests does: the host buffers mirror the
// device ones, and the rank copies between them around each check.

// mirrorComm is a rank whose collectives run on device twins of the
// harness's host buffers.
type mirrorComm interface {
	// Mirror hands the rank the host buffers the harness will pass to its
	// calls; the rank allocates a device twin of each, and maps a slice of
	// a host buffer to the same offset in its twin.
	Mirror(bufs ...[]byte) error
	// ToDevice copies host (a slice of a mirrored buffer) to its twin.
	ToDevice(host []byte) error
	// ToHost copies the twin of host back into it.
	ToHost(host []byte) error
}

// graphComm is a rank that can capture its stream's work into a graph and
// replay it (nccl-tests' -G).
type graphComm interface {
	BeginCapture() error
	// EndCapture ends the capture; Instantiate makes its graph
	// launchable, once no rank of the thread is capturing (CUDA refuses
	// it while any stream of the thread is).
	EndCapture() error
	Instantiate() error
	LaunchGraph() error
	FreeGraph() error
}

// eventComm is a rank that times its stream with events (nccl-tests' -I
// on GPUs): RecordEvent(i) marks the stream, EventMs(i, j) is the stream
// time from mark i to mark j.
type eventComm interface {
	RecordEvent(i int) error
	EventMs(i, j int) (float64, error)
}

// eventPreparer is an eventComm that must be told how many events a loop
// records before it starts, and 0 after it (the embedded stack's marks).
type eventPreparer interface {
	PrepareEvents(n int) (allocated bool, err error)
}

// threadGroupComm is a rank whose group calls are per thread, not per
// rank (NCCL's ncclGroupStart): a thread driving several ranks must
// enqueue all of them inside one group.
type threadGroupComm interface {
	ThreadGroups() bool
}

// threadGroupSharer is a thread-grouped rank that can be told which ranks
// share its thread: group calls nested inside the thread's group (a
// sendrecv's own group inside the runner's) then cost nothing, where each
// would otherwise be a call into the library that changes nothing.
type threadGroupSharer interface {
	ShareThreadGroup(cs []Comm)
}

// versioned is a backend built on libraries whose versions the header
// and the records name.
type versioned interface {
	Versions() (ncclVersion, cudaVersion, paths string)
}

// toDevice copies each host slice to c's device, if c has one.
func toDevice(c Comm, hosts ...[]byte) error {
	m, ok := c.(mirrorComm)
	if !ok {
		return nil
	}
	for _, h := range hosts {
		if err := m.ToDevice(h); err != nil {
			return err
		}
	}
	return nil
}

// toHost copies c's device twin of host back into it, if c has one.
func toHost(c Comm, host []byte) error {
	if m, ok := c.(mirrorComm); ok {
		return m.ToHost(host)
	}
	return nil
}

// threadGroups says whether the ranks cs, driven by one thread, need one
// group around all of them.
func threadGroups(cs []Comm) bool {
	if len(cs) < 2 {
		return false
	}
	g, ok := cs[0].(threadGroupComm)
	return ok && g.ThreadGroups()
}

// isCUDAError says err is a failed CUDA call (exit 2, nccl-tests'
// testCudaError); a failed NCCL call is a stack error (exit 3).
func isCUDAError(err error) bool {
	var e *nccl.Error
	return errors.As(err, &e) && e.Lib == "CUDA"
}
