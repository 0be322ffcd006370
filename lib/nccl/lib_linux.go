//go:build linux && (amd64 || arm64)

package nccl

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Lib is libcudart and libnccl, loaded. Its methods are safe for
// concurrent use: each wraps one call (CUDA's and NCCL's own rules on
// threads and devices apply).
type Lib struct {
	CUDARTPath, NCCLPath string // what was loaded
	NCCLVersion          int    // NCCL_VERSION_CODE of the loaded library
	CUDARTVersion        int    // cudaRuntimeGetVersion
	DriverVersion        int    // cudaDriverGetVersion

	// Set-up and error paths: purego's typed calls.
	cudaGetErrorString     func(int32) string
	cudaGetDeviceCount     func(*int32) int32
	cudaSetDevice          func(int32) int32
	cudaDeviceGetPCIBusId  func(*byte, int32, int32) int32
	cudaGetDeviceProps     func(unsafe.Pointer, int32) int32
	cudaMalloc             func(*uintptr, uintptr) int32
	cudaFree               func(uintptr) int32
	cudaStreamCreateFlags  func(*uintptr, uint32) int32
	cudaStreamDestroy      func(uintptr) int32
	cudaEventCreate        func(*uintptr) int32
	cudaEventDestroy       func(uintptr) int32
	cudaEventElapsedTime   func(*float32, uintptr, uintptr) int32
	cudaStreamEndCapture   func(uintptr, *uintptr) int32
	cudaGraphInstantiate   func(*uintptr, uintptr, uint64) int32
	cudaGraphExecDestroy   func(uintptr) int32
	cudaGraphDestroy       func(uintptr) int32
	ncclGetErrorString     func(int32) string
	ncclGetLastError       func(uintptr) string
	ncclGetUniqueId        func(*UniqueID) int32
	ncclCommInitRankConfig func(*uintptr, int32, UniqueID, int32, *config) int32
	ncclCommInitScalable   func(*uintptr, int32, int32, int32, *UniqueID, *config) int32 // nil before 2.23
	ncclCommDestroy        func(uintptr) int32
	ncclCommAbort          func(uintptr) int32
	ncclRedOpCreatePreMul  func(*int32, unsafe.Pointer, int32, int32, uintptr) int32
	ncclRedOpDestroy       func(int32, uintptr) int32
	ncclCommRegister       func(uintptr, uintptr, uintptr, *uintptr) int32
	ncclCommDeregister     func(uintptr, uintptr) int32
	ncclCommWindowReg      func(uintptr, uintptr, uintptr, *uintptr, int32) int32 // nil before 2.27
	ncclCommWindowDereg    func(uintptr, uintptr) int32
	ncclMemAlloc           func(*uintptr, uintptr) int32
	ncclMemFree            func(uintptr) int32

	// The timed path: raw symbols for call (ccall_linux.go).
	fnMemcpyAsync, fnStreamSync, fnStreamBeginCapture, fnGraphLaunch, fnEventRecord  uintptr
	fnAllReduce, fnBroadcast, fnReduce, fnAllGather, fnReduceScatter, fnSend, fnRecv uintptr
	fnGroupStart, fnGroupEnd                                                         uintptr
	viaPurego                                                                        bool // call goes through purego.SyscallN (LoadOptions.Purego)
	initByValue                                                                      bool // LoadOptions.InitByValue
}

// LoadWith finds and loads libcudart and libnccl (discover.go says where
// it looks, o where the user said) and resolves every symbol the backend
// calls. LoadWith(LoadOptionsFromEnv()) is NCCL's way, where variables
// configure the library.
func LoadWith(o LoadOptions) (*Lib, error) {
	l := &Lib{viaPurego: o.Purego || !haveTrampoline, initByValue: o.InitByValue}
	cudart, path, err := open(cudartLib, o)
	if err != nil {
		return nil, err
	}
	l.CUDARTPath = path
	nccl, path, err := open(ncclLib, o)
	if err != nil {
		return nil, err
	}
	l.NCCLPath = path
	var missing []string
	reg := func(h uintptr, fptr any, name string) {
		sym, err := purego.Dlsym(h, name)
		if err != nil {
			missing = append(missing, name)
			return
		}
		purego.RegisterFunc(fptr, sym)
	}
	optional := func(h uintptr, fptr any, name string) {
		if sym, err := purego.Dlsym(h, name); err == nil {
			purego.RegisterFunc(fptr, sym)
		}
	}
	raw := func(h uintptr, p *uintptr, name string) {
		sym, err := purego.Dlsym(h, name)
		if err != nil {
			missing = append(missing, name)
			return
		}
		*p = sym
	}
	var runtimeVersion, driverVersion func(*int32) int32
	reg(cudart, &runtimeVersion, "cudaRuntimeGetVersion")
	reg(cudart, &driverVersion, "cudaDriverGetVersion")
	reg(cudart, &l.cudaGetErrorString, "cudaGetErrorString")
	reg(cudart, &l.cudaGetDeviceCount, "cudaGetDeviceCount")
	reg(cudart, &l.cudaSetDevice, "cudaSetDevice")
	reg(cudart, &l.cudaDeviceGetPCIBusId, "cudaDeviceGetPCIBusId")
	if _, err := purego.Dlsym(cudart, "cudaGetDeviceProperties_v2"); err == nil {
		reg(cudart, &l.cudaGetDeviceProps, "cudaGetDeviceProperties_v2")
	} else {
		reg(cudart, &l.cudaGetDeviceProps, "cudaGetDeviceProperties")
	}
	reg(cudart, &l.cudaMalloc, "cudaMalloc")
	reg(cudart, &l.cudaFree, "cudaFree")
	reg(cudart, &l.cudaStreamCreateFlags, "cudaStreamCreateWithFlags")
	reg(cudart, &l.cudaStreamDestroy, "cudaStreamDestroy")
	reg(cudart, &l.cudaEventCreate, "cudaEventCreate")
	reg(cudart, &l.cudaEventDestroy, "cudaEventDestroy")
	reg(cudart, &l.cudaEventElapsedTime, "cudaEventElapsedTime")
	reg(cudart, &l.cudaStreamEndCapture, "cudaStreamEndCapture")
	reg(cudart, &l.cudaGraphInstantiate, "cudaGraphInstantiateWithFlags")
	reg(cudart, &l.cudaGraphExecDestroy, "cudaGraphExecDestroy")
	reg(cudart, &l.cudaGraphDestroy, "cudaGraphDestroy")
	raw(cudart, &l.fnMemcpyAsync, "cudaMemcpyAsync")
	raw(cudart, &l.fnStreamSync, "cudaStreamSynchronize")
	raw(cudart, &l.fnStreamBeginCapture, "cudaStreamBeginCapture")
	raw(cudart, &l.fnGraphLaunch, "cudaGraphLaunch")
	raw(cudart, &l.fnEventRecord, "cudaEventRecord")

	var getVersion func(*int32) int32
	reg(nccl, &getVersion, "ncclGetVersion")
	reg(nccl, &l.ncclGetErrorString, "ncclGetErrorString")
	reg(nccl, &l.ncclGetLastError, "ncclGetLastError")
	reg(nccl, &l.ncclGetUniqueId, "ncclGetUniqueId")
	reg(nccl, &l.ncclCommInitRankConfig, "ncclCommInitRankConfig")
	optional(nccl, &l.ncclCommInitScalable, "ncclCommInitRankScalable")
	reg(nccl, &l.ncclCommDestroy, "ncclCommDestroy")
	reg(nccl, &l.ncclCommAbort, "ncclCommAbort")
	reg(nccl, &l.ncclRedOpCreatePreMul, "ncclRedOpCreatePreMulSum")
	reg(nccl, &l.ncclRedOpDestroy, "ncclRedOpDestroy")
	reg(nccl, &l.ncclCommRegister, "ncclCommRegister")
	reg(nccl, &l.ncclCommDeregister, "ncclCommDeregister")
	optional(nccl, &l.ncclCommWindowReg, "ncclCommWindowRegister")
	optional(nccl, &l.ncclCommWindowDereg, "ncclCommWindowDeregister")
	optional(nccl, &l.ncclMemAlloc, "ncclMemAlloc")
	optional(nccl, &l.ncclMemFree, "ncclMemFree")
	raw(nccl, &l.fnAllReduce, "ncclAllReduce")
	raw(nccl, &l.fnBroadcast, "ncclBroadcast")
	raw(nccl, &l.fnReduce, "ncclReduce")
	raw(nccl, &l.fnAllGather, "ncclAllGather")
	raw(nccl, &l.fnReduceScatter, "ncclReduceScatter")
	raw(nccl, &l.fnSend, "ncclSend")
	raw(nccl, &l.fnRecv, "ncclRecv")
	raw(nccl, &l.fnGroupStart, "ncclGroupStart")
	raw(nccl, &l.fnGroupEnd, "ncclGroupEnd")
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s or %s lacks %s: is it NCCL 2.19 or later and a CUDA 12 or later runtime?",
			l.NCCLPath, l.CUDARTPath, strings.Join(missing, ", "))
	}
	var v int32
	if rc := getVersion(&v); rc != 0 {
		return nil, l.ncclErr("ncclGetVersion", rc, 0)
	}
	l.NCCLVersion = int(v)
	if rc := runtimeVersion(&v); rc != 0 {
		return nil, l.cudaErr("cudaRuntimeGetVersion", rc)
	}
	l.CUDARTVersion = int(v)
	if rc := driverVersion(&v); rc == 0 {
		l.DriverVersion = int(v)
	}
	return l, nil
}

// open loads lib from the first candidate that loads.
func open(lib library, o LoadOptions) (uintptr, string, error) {
	cs, fromEnv := lib.candidates(o, filepath.Glob)
	// dlerror is per OS thread: a goroutine that moved between dlopen and
	// purego's dlerror call read another thread's (empty) message, which
	// CI saw once.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var tried []string
	for _, c := range cs {
		if !c.soname && !fileExists(c.path) {
			tried = append(tried, c.path+": no such file")
			continue
		}
		h, err := purego.Dlopen(c.path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, resolved(c), nil
		}
		msg := strings.TrimPrefix(err.Error(), c.path+": ") // dlerror names the file too
		if c.soname && strings.Contains(msg, "No such file") {
			msg = "not in the loader's path"
		}
		tried = append(tried, c.path+": "+msg)
	}
	return 0, "", &NotFoundError{Lib: lib.what, Env: lib.env, FromEnv: fromEnv, Tried: tried}
}

// resolved names what a candidate loaded: the file, or the soname.
func resolved(c candidate) string {
	if p, err := filepath.EvalSymlinks(c.path); err == nil {
		return p
	}
	return c.path
}

func (l *Lib) cudaErr(call string, rc int32) error {
	if rc == 0 {
		return nil
	}
	return &Error{Call: call, Lib: "CUDA", Code: int(rc), Text: l.cudaGetErrorString(rc)}
}

func (l *Lib) ncclErr(call string, rc int32, comm uintptr) error {
	if rc == 0 {
		return nil
	}
	e := &Error{Call: call, Lib: "NCCL", Code: int(rc), Text: l.ncclGetErrorString(rc)}
	if l.ncclGetLastError != nil {
		e.Detail = strings.TrimSpace(l.ncclGetLastError(comm))
	}
	return e
}

// OnDevice runs f on a thread locked to the goroutine with dev current:
// CUDA keeps the current device per thread.
func (l *Lib) OnDevice(dev int, f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := l.SetDevice(dev); err != nil {
		return err
	}
	return f()
}

// SetDevice is cudaSetDevice, for the calling thread.
func (l *Lib) SetDevice(dev int) error {
	return l.cudaErr(fmt.Sprintf("cudaSetDevice(%d)", dev), l.cudaSetDevice(int32(dev)))
}

// DeviceCount is cudaGetDeviceCount.
func (l *Lib) DeviceCount() (int, error) {
	var n int32
	if err := l.cudaErr("cudaGetDeviceCount", l.cudaGetDeviceCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Describe returns dev's PCI bus id and name.
func (l *Lib) Describe(dev int) (busID, name string, err error) {
	var bus [64]byte
	if err := l.cudaErr("cudaDeviceGetPCIBusId", l.cudaDeviceGetPCIBusId(&bus[0], int32(len(bus)), int32(dev))); err != nil {
		return "", "", err
	}
	// cudaDeviceProp starts with char name[256]; the buffer is far larger
	// than the struct of any CUDA release.
	props := make([]byte, 16<<10)
	if err := l.cudaErr("cudaGetDeviceProperties", l.cudaGetDeviceProps(unsafe.Pointer(&props[0]), int32(dev))); err != nil {
		return "", "", err
	}
	return cString(bus[:]), cString(props[:256]), nil
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Malloc is cudaMalloc on the current device.
func (l *Lib) Malloc(bytes int) (uintptr, error) {
	var p uintptr
	err := l.cudaErr(fmt.Sprintf("cudaMalloc(%d bytes)", bytes), l.cudaMalloc(&p, uintptr(bytes)))
	return p, err
}

// Free is cudaFree.
func (l *Lib) Free(p uintptr) error { return l.cudaErr("cudaFree", l.cudaFree(p)) }

// MemAlloc is ncclMemAlloc, the allocation symmetric registration needs.
func (l *Lib) MemAlloc(bytes int) (uintptr, error) {
	if l.ncclMemAlloc == nil {
		return 0, fmt.Errorf("%s has no ncclMemAlloc (NCCL 2.19 or later has)", l.NCCLPath)
	}
	var p uintptr
	err := l.ncclErr(fmt.Sprintf("ncclMemAlloc(%d bytes)", bytes), l.ncclMemAlloc(&p, uintptr(bytes)), 0)
	return p, err
}

// HasMemAlloc says the library has ncclMemAlloc and ncclMemFree.
func (l *Lib) HasMemAlloc() bool { return l.ncclMemAlloc != nil && l.ncclMemFree != nil }

// MemFree is ncclMemFree.
func (l *Lib) MemFree(p uintptr) error { return l.ncclErr("ncclMemFree", l.ncclMemFree(p), 0) }

// StreamCreate makes a non-blocking stream on the current device.
func (l *Lib) StreamCreate() (uintptr, error) {
	var s uintptr
	err := l.cudaErr("cudaStreamCreateWithFlags", l.cudaStreamCreateFlags(&s, cudaStreamNonBlocking))
	return s, err
}

// StreamDestroy is cudaStreamDestroy.
func (l *Lib) StreamDestroy(s uintptr) error {
	return l.cudaErr("cudaStreamDestroy", l.cudaStreamDestroy(s))
}

// StreamSynchronize waits for everything on s.
func (l *Lib) StreamSynchronize(s uintptr) error {
	return l.cudaErr("cudaStreamSynchronize", l.call(l.fnStreamSync, 1, cArgs{s}))
}

// ToDevice copies host to dev on stream s and waits for it.
func (l *Lib) ToDevice(dev uintptr, host []byte, s uintptr) error {
	if len(host) == 0 {
		return nil
	}
	r, _, _ := purego.SyscallN(l.fnMemcpyAsync, dev, uintptr(unsafe.Pointer(&host[0])), uintptr(len(host)), cudaMemcpyHostToDevice, s)
	if err := l.cudaErr("cudaMemcpyAsync(host to device)", int32(r)); err != nil {
		return err
	}
	return l.StreamSynchronize(s)
}

// ToHost copies dev to host on stream s and waits for it.
func (l *Lib) ToHost(host []byte, dev uintptr, s uintptr) error {
	if len(host) == 0 {
		return nil
	}
	r, _, _ := purego.SyscallN(l.fnMemcpyAsync, uintptr(unsafe.Pointer(&host[0])), dev, uintptr(len(host)), cudaMemcpyDeviceToHost, s)
	if err := l.cudaErr("cudaMemcpyAsync(device to host)", int32(r)); err != nil {
		return err
	}
	return l.StreamSynchronize(s)
}

// EventCreate is cudaEventCreate on the current device.
func (l *Lib) EventCreate() (uintptr, error) {
	var e uintptr
	err := l.cudaErr("cudaEventCreate", l.cudaEventCreate(&e))
	return e, err
}

// EventDestroy is cudaEventDestroy.
func (l *Lib) EventDestroy(e uintptr) error {
	return l.cudaErr("cudaEventDestroy", l.cudaEventDestroy(e))
}

// EventRecord records e on stream s.
func (l *Lib) EventRecord(e, s uintptr) error {
	return l.cudaErr("cudaEventRecord", l.call(l.fnEventRecord, 2, cArgs{e, s}))
}

// EventElapsed is cudaEventElapsedTime in milliseconds.
func (l *Lib) EventElapsed(start, end uintptr) (float64, error) {
	var ms float32
	err := l.cudaErr("cudaEventElapsedTime", l.cudaEventElapsedTime(&ms, start, end))
	return float64(ms), err
}

// BeginCapture starts capturing stream s into a graph, thread-local mode
// as nccl-tests does.
func (l *Lib) BeginCapture(s uintptr) error {
	return l.cudaErr("cudaStreamBeginCapture", l.call(l.fnStreamBeginCapture, 2, cArgs{s, cudaStreamCaptureModeThreadLocal}))
}

// EndCapture ends the capture on s and returns its graph.
func (l *Lib) EndCapture(s uintptr) (graph uintptr, err error) {
	err = l.cudaErr("cudaStreamEndCapture", l.cudaStreamEndCapture(s, &graph))
	return graph, err
}

// Instantiate makes graph launchable. CUDA refuses it while any stream of
// the thread is still capturing: end every capture first.
func (l *Lib) Instantiate(graph uintptr) (exec uintptr, err error) {
	err = l.cudaErr("cudaGraphInstantiateWithFlags", l.cudaGraphInstantiate(&exec, graph, 0))
	return exec, err
}

// GraphLaunch launches an instantiated graph on s.
func (l *Lib) GraphLaunch(exec, s uintptr) error {
	return l.cudaErr("cudaGraphLaunch", l.call(l.fnGraphLaunch, 2, cArgs{exec, s}))
}

// GraphFree destroys a graph and its instance (either may be 0).
func (l *Lib) GraphFree(graph, exec uintptr) error {
	var err error
	if exec != 0 {
		err = l.cudaErr("cudaGraphExecDestroy", l.cudaGraphExecDestroy(exec))
	}
	if graph != 0 {
		err = errors.Join(err, l.cudaErr("cudaGraphDestroy", l.cudaGraphDestroy(graph)))
	}
	return err
}

// FlushStdio flushes the C library's stdout and stderr buffers: NCCL
// prints its debug log through them, and a Go program exits without
// running C's exit handlers, so a piped log would lose its last lines.
func (l *Lib) FlushStdio() {
	if fflush, err := purego.Dlsym(purego.RTLD_DEFAULT, "fflush"); err == nil {
		purego.SyscallN(fflush, 0) // fflush(NULL): every output stream
	}
}

// GetUniqueID is ncclGetUniqueId.
func (l *Lib) GetUniqueID() (UniqueID, error) {
	var id UniqueID
	err := l.ncclErr("ncclGetUniqueId", l.ncclGetUniqueId(&id), 0)
	return id, err
}

// InitHow says how CommInitRank passes the unique id.
func (l *Lib) InitHow() string {
	if l.ncclCommInitScalable != nil && !l.initByValue {
		return "ncclCommInitRankScalable (the id by pointer)"
	}
	return "ncclCommInitRankConfig (the 128-byte id by value, through purego)"
}

// CommInitRank creates rank of nranks on the current device, with
// channels CTAs when channels > 0. Where NCCL has
// ncclCommInitRankScalable (2.23 on) the id goes by pointer; else
// ncclCommInitRankConfig takes it by value, which purego v0.11 passes on
// the stack as the ABI wants. LoadOptions.InitByValue forces the latter.
func (l *Lib) CommInitRank(nranks int, id UniqueID, rank, channels int) (uintptr, error) {
	var comm uintptr
	cfg := newConfig(channels)
	if l.ncclCommInitScalable != nil && !l.initByValue {
		ids := []UniqueID{id}
		rc := l.ncclCommInitScalable(&comm, int32(nranks), int32(rank), 1, &ids[0], &cfg)
		return comm, l.ncclErr(fmt.Sprintf("ncclCommInitRankScalable(rank %d of %d)", rank, nranks), rc, 0)
	}
	rc := l.ncclCommInitRankConfig(&comm, int32(nranks), id, int32(rank), &cfg)
	return comm, l.ncclErr(fmt.Sprintf("ncclCommInitRankConfig(rank %d of %d)", rank, nranks), rc, 0)
}

// CommDestroy is ncclCommDestroy.
func (l *Lib) CommDestroy(c uintptr) error {
	return l.ncclErr("ncclCommDestroy", l.ncclCommDestroy(c), 0)
}

// CommAbort is ncclCommAbort.
func (l *Lib) CommAbort(c uintptr) error { return l.ncclErr("ncclCommAbort", l.ncclCommAbort(c), 0) }

// GroupStart is ncclGroupStart: groups are per thread, so the caller's
// goroutine must stay on its thread until the matching GroupEnd.
func (l *Lib) GroupStart() error {
	return l.ncclErr("ncclGroupStart", l.call(l.fnGroupStart, 0, cArgs{}), 0)
}

// GroupEnd is ncclGroupEnd.
func (l *Lib) GroupEnd() error {
	return l.ncclErr("ncclGroupEnd", l.call(l.fnGroupEnd, 0, cArgs{}), 0)
}

// PreMulSum creates the reduction that multiplies by scalar (one element
// of dt, host memory) before summing.
func (l *Lib) PreMulSum(comm uintptr, scalar []byte, dt int32) (int32, error) {
	if len(scalar) == 0 {
		return 0, fmt.Errorf("ncclRedOpCreatePreMulSum: no scalar")
	}
	var op int32
	err := l.ncclErr("ncclRedOpCreatePreMulSum", l.ncclRedOpCreatePreMul(&op, unsafe.Pointer(&scalar[0]), dt, ncclScalarHostImmediate, comm), comm)
	return op, err
}

// RedOpDestroy frees a reduction PreMulSum created.
func (l *Lib) RedOpDestroy(op int32, comm uintptr) error {
	return l.ncclErr("ncclRedOpDestroy", l.ncclRedOpDestroy(op, comm), comm)
}

// Register is ncclCommRegister (-R 1).
func (l *Lib) Register(comm, buf uintptr, bytes int) (uintptr, error) {
	var h uintptr
	err := l.ncclErr("ncclCommRegister", l.ncclCommRegister(comm, buf, uintptr(bytes), &h), comm)
	return h, err
}

// Deregister is ncclCommDeregister.
func (l *Lib) Deregister(comm, h uintptr) error {
	return l.ncclErr("ncclCommDeregister", l.ncclCommDeregister(comm, h), comm)
}

// WindowRegister is ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC
// (-R 2): collective over the communicator.
func (l *Lib) WindowRegister(comm, buf uintptr, bytes int) (uintptr, error) {
	if l.ncclCommWindowReg == nil {
		return 0, fmt.Errorf("%s has no ncclCommWindowRegister: symmetric registration (-R 2) needs NCCL 2.27 or later", l.NCCLPath)
	}
	var w uintptr
	err := l.ncclErr("ncclCommWindowRegister", l.ncclCommWindowReg(comm, buf, uintptr(bytes), &w, ncclWinCollSymmetric), comm)
	return w, err
}

// WindowDeregister is ncclCommWindowDeregister.
func (l *Lib) WindowDeregister(comm, w uintptr) error {
	return l.ncclErr("ncclCommWindowDeregister", l.ncclCommWindowDereg(comm, w), comm)
}

// The collectives: enqueue on stream s, return at once.

func (l *Lib) AllReduce(send, recv uintptr, count int, dt, op int32, comm, s uintptr) error {
	return l.ncclErr("ncclAllReduce", l.call(l.fnAllReduce, 7, cArgs{send, recv, uintptr(count), uintptr(dt), uintptr(op), comm, s}), comm)
}

func (l *Lib) Broadcast(send, recv uintptr, count int, dt int32, root int, comm, s uintptr) error {
	return l.ncclErr("ncclBroadcast", l.call(l.fnBroadcast, 7, cArgs{send, recv, uintptr(count), uintptr(dt), uintptr(root), comm, s}), comm)
}

func (l *Lib) Reduce(send, recv uintptr, count int, dt, op int32, root int, comm, s uintptr) error {
	return l.ncclErr("ncclReduce", l.call(l.fnReduce, 8, cArgs{send, recv, uintptr(count), uintptr(dt), uintptr(op), uintptr(root), comm, s}), comm)
}

func (l *Lib) AllGather(send, recv uintptr, sendCount int, dt int32, comm, s uintptr) error {
	return l.ncclErr("ncclAllGather", l.call(l.fnAllGather, 6, cArgs{send, recv, uintptr(sendCount), uintptr(dt), comm, s}), comm)
}

func (l *Lib) ReduceScatter(send, recv uintptr, recvCount int, dt, op int32, comm, s uintptr) error {
	return l.ncclErr("ncclReduceScatter", l.call(l.fnReduceScatter, 7, cArgs{send, recv, uintptr(recvCount), uintptr(dt), uintptr(op), comm, s}), comm)
}

func (l *Lib) Send(buf uintptr, count int, dt int32, peer int, comm, s uintptr) error {
	return l.ncclErr("ncclSend", l.call(l.fnSend, 6, cArgs{buf, uintptr(count), uintptr(dt), uintptr(peer), comm, s}), comm)
}

func (l *Lib) Recv(buf uintptr, count int, dt int32, peer int, comm, s uintptr) error {
	return l.ncclErr("ncclRecv", l.call(l.fnRecv, 6, cArgs{buf, uintptr(count), uintptr(dt), uintptr(peer), comm, s}), comm)
}
