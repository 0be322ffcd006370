// The device kernels of -D (nccl-tests' all_reduce.cu and alltoall.cu
// kernels, written for the embedded stack's device API): each rank runs
// -V coops (goroutines, a CTA each) that load and store their LSA peers'
// symmetric windows directly and meet at LSA barriers, instead of calling
// the stack's collective. Which kernels exist, what they need and the
// checks of -D, -V and -R are here; launching them is devrun.go's.

package perf

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
)

// devKernel is one -D implementation of one collective.
type devKernel struct {
	impl  string // what records and the header call it: "lsa-D1"
	about string // the header's description
	// refused, when set, is why this -D does not run (coop is nil).
	refused string
	// reqs is the device communicator a run of v coops per rank needs.
	reqs func(v int) ccl.DevCommRequirements
	// blocks: the count is per peer (alltoall's), so a launch moves count
	// times the peers elements (coopsFor).
	blocks bool
	// lsaWorld: the kernel loads and stores every rank's windows, so
	// every rank must be in this rank's LSA team (one host), as
	// nccl-tests' LSA kernels require (nRanks == ncclTeamLsa.nRanks).
	lsaWorld bool
	// gin: the kernel puts through GIN (devgin.go): each coop gets a GIN
	// context and a hybrid barrier session, each rank a stage window, and
	// the ranks may span hosts.
	gin bool
	// stage, when set, runs on every coop of an in-place launch, all of
	// them done before any coop starts coop: the rank's own blocks copied
	// aside before any peer can overwrite them.
	stage func(c *coop)
	// coop runs coop c.k's part of one launch, barriers included.
	coop func(c *coop) error
}

// coopsNote is the header's word on the coops that run.
func (k *devKernel) coopsNote() string {
	if k.gin {
		return ""
	}
	return "; as many run as every rank's free processors run at once, a launch one a 64 KiB it moves: records' device_coops"
}

// lsaReqs: one LSA barrier per coop.
func lsaReqs(v int) ccl.DevCommRequirements { return ccl.DevCommRequirements{LsaBarrierCount: v} }

// devKernels lists the -D implementations by collective and -D.
var devKernels = map[string]map[int]*devKernel{
	"allreduce": {
		1: {impl: "lsa-D1", about: "LSA, element by element (allReduceLsaKernel)", reqs: lsaReqs, lsaWorld: true, coop: lsaCoop(nil, allReduceD1, allReduceIdle)},
		2: {impl: "lsa-D2", about: "LSA, vectorised with lib/reduce's SIMD sum (allReduceLsaVectorizedKernel)", reqs: lsaReqs, lsaWorld: true, coop: lsaCoop(nil, allReduceD2, allReduceIdle)},
		3: {refused: "multimem (NVLink SHARP) has no CPU counterpart"},
		4: {refused: "multimem (NVLink SHARP) has no CPU counterpart"},
	},
	"alltoall": {
		1: {impl: "lsa-D1", about: "LSA stores, element by element (NvlAlltoAllKernel)", reqs: lsaReqs, blocks: true, lsaWorld: true, coop: lsaCoop(alltoAllStage, alltoAllD1, alltoAllIdle)},
		2: {impl: "lsa-D2", about: "LSA stores, bulk copies (NvlAlltoAllKernelOptimized)", reqs: lsaReqs, blocks: true, lsaWorld: true, coop: lsaCoop(alltoAllStage, alltoAllD2, alltoAllIdle)},
		3: {impl: "gin-D3", about: "GIN puts with a signal each, a wait for the signals, the world barrier (GinAlltoAllKernel)", reqs: ginReqs, gin: true, stage: ginStage, coop: ginAlltoAll(false)},
		4: {impl: "hybrid-D4", about: "LSA stores inside the host, GIN puts across hosts, the world barrier (HybridAlltoAllKernel)", reqs: ginReqs, gin: true, stage: ginStage, coop: ginAlltoAll(true)},
	},
}

// maxDeviceImpl is the largest -D nccl-tests has (4).
const maxDeviceImpl = 4

// maxDeviceCTAs is -V's largest value, as nccl-tests' (128).
const maxDeviceCTAs = 128

// deviceTypes are the types the kernels sum: nccl-tests' (int8 to
// double), and bfloat16, which lib/reduce sums too (nccl-tests' kernels
// leave it out).
var deviceTypes = []reduce.DataType{reduce.Int8, reduce.Uint8, reduce.Int32, reduce.Uint32, reduce.Int64, reduce.Uint64,
	reduce.Float16, reduce.Float32, reduce.Float64, reduce.Bfloat16}

// validateDevice checks -R, -D and -V on the embedded backend, apart from
// the collective (fitDevice).
func (o *Options) validateDevice() error {
	switch {
	case o.Register < 0 || o.Register > 2:
		return usagef("invalid -R/--local_register %d: want 0 (none), 1 (local: nothing to do here) or 2 (symmetric windows)", o.Register)
	case o.DeviceImpl < 0 || o.DeviceImpl > maxDeviceImpl:
		return usagef("invalid -D/--device_implementation %d: want 0 (the stack's collective) or 1 to %d (nccl-tests' device kernels)", o.DeviceImpl, maxDeviceImpl)
	case o.DeviceImpl == 0:
		return nil
	case o.Register != 2:
		return usagef("-D/--device_implementation %d needs -R 2: the device kernels load and store their peers' buffers through symmetric windows (as in nccl-tests)", o.DeviceImpl)
	case o.DeviceCTAs < 1 || o.DeviceCTAs > maxDeviceCTAs:
		return usagef("invalid -V/--device_cta_count %d: want 1 to %d coops per rank", o.DeviceCTAs, maxDeviceCTAs)
	case o.Interleave || len(o.Protos)+len(o.Algos)+len(o.Channels)+len(o.BuffSizes)+len(o.ConfigList) > 0:
		return usagef("-D/--device_implementation %d runs nccl-tests' device kernels, not the stack's collectives: --algo, --proto, --nchannels, --buffsize, --configs and --interleave choose nothing there (drop them)", o.DeviceImpl)
	}
	for _, op := range o.Ops {
		if op != reduce.Sum {
			return usagef("-D/--device_implementation %d sums only (as nccl-tests' kernels): -o %s has no device kernel; use -o sum", o.DeviceImpl, op)
		}
	}
	for _, dt := range o.Types {
		if !slices.Contains(deviceTypes, dt) {
			return usagef("-D/--device_implementation %d has no kernel for type %s: valid are %s", o.DeviceImpl, dt, typeNames(deviceTypes))
		}
	}
	return nil
}

// fitDevice checks -D against collective coll and the run's layout of
// hosts: the kernel it names, or an error saying why there is none.
func (o *Options) fitDevice(coll string) (*devKernel, error) {
	if o.DeviceImpl == 0 || o.Backend != BackendEmbedded {
		return nil, nil
	}
	ks := devKernels[coll]
	if ks == nil {
		var have []string
		for c, ks := range devKernels {
			var ds []string
			for d := 1; d <= maxDeviceImpl; d++ {
				if k := ks[d]; k != nil && k.coop != nil {
					ds = append(ds, fmt.Sprint(d))
				}
			}
			have = append(have, fmt.Sprintf("%s (-D %s)", c, strings.Join(ds, ", ")))
		}
		slices.Sort(have)
		return nil, usagef("-D/--device_implementation %d: %s has no device kernel; the collectives that have one: %s", o.DeviceImpl, coll, strings.Join(have, " and "))
	}
	k := ks[o.DeviceImpl]
	if k == nil || k.coop == nil {
		why := "no such kernel"
		if k != nil {
			why = k.refused
		}
		return nil, usagef("-D/--device_implementation %d on %s: %s; use -D 1 or 2", o.DeviceImpl, coll, why)
	}
	if k.gin {
		if n := o.nRanks() * max(o.NP, 1); o.RanksPerHost > 0 && n%o.RanksPerHost != 0 {
			return nil, usagef("-D/--device_implementation %d on %s (%s): the device API needs every host to hold as many ranks, and --ranks-per-host %d does not divide the %d ranks: use a divisor of %d", o.DeviceImpl, coll, k.impl, o.RanksPerHost, n, n)
		}
	}
	if k.lsaWorld {
		hosts := o.Hosts
		if n := o.nRanks() * max(o.NP, 1); o.RanksPerHost > 0 && o.RanksPerHost < n {
			hosts = n / o.RanksPerHost
		}
		if hosts > 1 {
			return nil, usagef("-D/--device_implementation %d on %s (%s) loads and stores every rank's memory, so every rank must be in one LSA team (one host), as nccl-tests' LSA kernels require; this run has %d hosts (--hosts/--ranks-per-host): run it on one host", o.DeviceImpl, coll, k.impl, hosts)
		}
	}
	return k, nil
}

func typeNames(ts []reduce.DataType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return strings.Join(names, ", ")
}

// coop is one coop's view of one launch on one rank.
type coop struct {
	r     *devRank
	k     int // the coop's index: its barrier index too
	l     *devLaunch
	bar   *ccl.LsaBarrierSession
	ptrs  []unsafe.Pointer // scratch: one per LSA peer and buffer (the -D 1 loops)
	srcs  [][]byte         // scratch: one per LSA peer
	dsts  [][]byte         // scratch: one per LSA peer
	tmp   []byte           // scratch: a chunk of sums (-D 2)
	stage []byte           // scratch: in-place alltoall's copy of the coop's range of this rank's blocks
	kerns [reduce.NumDataTypes]*reduce.Kernel
	// GIN kernels (devgin.go): the coop's GIN context and its session on
	// the hybrid (world) barrier of its index.
	gin  *ccl.Gin
	hbar *ccl.BarrierSession
	// released: the coop arrived at its last launch's release barrier and
	// has not waited there yet (lsaCoop); owned by the goroutine running
	// the coop, then, after the stream's Synchronize, by the rank's.
	released bool
}

// lsaCoop wraps a kernel body between the LSA barrier syncs of nccl-tests'
// kernels: the first (acquire) says every peer's send buffer is written
// and its recv buffer free, the second (release) that every peer's
// stores into this rank's recv buffer have landed. pre, when set, runs
// before the first.
//
// A coop that idle says has no element on any rank (the shares depend on
// the count and the coops alone, so every rank says the same) skips both:
// its barriers would order no access, and on a CPU each costs a meeting
// of its peers (8 B with -V 16: 32 meetings for 2 elements).
//
// The release's wait is left to whatever comes next on the coop's
// barrier: the next launch's acquire (whose wait, for every peer's next
// arrival, covers the release's: a peer arrives at the next acquire only
// after its release), or the rank's Synchronize (waitReleased). A GPU's
// kernel waits at its release before it ends; a launch here ends at the
// arrival, and back-to-back launches meet their peers once each instead
// of twice. Nothing reads the outputs before one of the two: the next
// launch's loads and stores come after its acquire, and the host's after
// Synchronize (stream order). pre reads this rank's own outputs of the
// last launch (in place), so it waits at the release first.
func lsaCoop(pre, body func(c *coop), idle func(c *coop) bool) func(c *coop) error {
	return func(c *coop) error {
		if idle != nil && idle(c) {
			return nil
		}
		if pre != nil {
			if c.released {
				c.released = false
				if err := c.bar.Wait(); err != nil {
					return err
				}
			}
			pre(c)
		}
		if err := c.bar.Sync(); err != nil {
			return err
		}
		c.released = false
		body(c)
		c.bar.Arrive()
		c.released = true
		return nil
	}
}

// waitReleased ends the coop's last release (lsaCoop): after the stream's
// Synchronize, on the rank's goroutine.
func (c *coop) waitReleased() error {
	if !c.released {
		return nil
	}
	c.released = false
	return c.bar.Wait()
}

// lineBytes aligns the coops' ranges, so that two coops never write one
// cache line of a buffer.
const lineBytes = 64

// split is part i of n of count elements of size bytes, its ends on
// whole cache lines (but the last).
func split(count, size, i, n int) (lo, hi int) {
	per := max(lineBytes/size, 1)
	lines := (count + per - 1) / per
	lo, hi = min(i*lines/n*per, count), min((i+1)*lines/n*per, count)
	return lo, hi
}

// peerViews fills c.srcs and c.dsts with every LSA peer's bytes of the
// launch: its send buffer from the send offset (its recv buffer in
// place) and its recv buffer from the recv offset.
func (c *coop) peerViews(sendLen, recvLen int) {
	r, l := c.r, c.l
	sends := r.peerSend
	if l.inPlace {
		sends = r.peerRecv
	}
	for p := range r.peerRecv {
		c.srcs[p] = sends[p][l.sendOff : l.sendOff+sendLen]
		c.dsts[p] = r.peerRecv[p][l.recvOff : l.recvOff+recvLen]
	}
}

// allReduce's share: coop k of LSA rank l sums share k*n+l of the n*v,
// as nccl-tests' threads stride by rank within each CTA index.
func (c *coop) allReduceShare() (lo, hi int) {
	n := len(c.r.peerRecv)
	return split(c.l.count, c.l.dt.Size(), c.k*n+c.r.d.LsaRank, n*c.l.coops)
}

// allReduceIdle says whether coop k has no element on any rank: its
// shares k*n to k*n+n-1 are all empty.
func allReduceIdle(c *coop) bool {
	n, size := len(c.r.peerRecv), c.l.dt.Size()
	lo, _ := split(c.l.count, size, c.k*n, n*c.l.coops)
	_, hi := split(c.l.count, size, c.k*n+n-1, n*c.l.coops)
	return lo >= hi
}

// alltoAllIdle says whether coop k has no element of any block on any
// rank.
func alltoAllIdle(c *coop) bool {
	lo, hi := split(c.l.count, c.l.dt.Size(), c.k, c.l.coops)
	return lo >= hi
}

// allReduceD1 is allReduceLsaKernel: element by element, every peer's
// element summed in rank order, the sum stored to every peer.
func allReduceD1(c *coop) {
	l := c.l
	b := l.count * l.dt.Size()
	c.peerViews(b, b)
	lo, hi := c.allReduceShare()
	if lo >= hi {
		return
	}
	n := len(c.srcs)
	srcs, dsts := c.ptrs[:n], c.ptrs[n:2*n]
	for p := range n {
		srcs[p], dsts[p] = unsafe.Pointer(unsafe.SliceData(c.srcs[p])), unsafe.Pointer(unsafe.SliceData(c.dsts[p]))
	}
	switch l.dt {
	case reduce.Int8:
		sumElems[int8](srcs, dsts, lo, hi)
	case reduce.Uint8:
		sumElems[uint8](srcs, dsts, lo, hi)
	case reduce.Int32:
		sumElems[int32](srcs, dsts, lo, hi)
	case reduce.Uint32:
		sumElems[uint32](srcs, dsts, lo, hi)
	case reduce.Int64:
		sumElems[int64](srcs, dsts, lo, hi)
	case reduce.Uint64:
		sumElems[uint64](srcs, dsts, lo, hi)
	case reduce.Float32:
		sumElems[float32](srcs, dsts, lo, hi)
	case reduce.Float64:
		sumElems[float64](srcs, dsts, lo, hi)
	case reduce.Float16:
		sumHalves(srcs, dsts, lo, hi, reduce.F16ToFloat32, reduce.F16FromFloat32)
	case reduce.Bfloat16:
		sumHalves(srcs, dsts, lo, hi, reduce.BF16ToFloat32, reduce.BF16FromFloat32)
	}
}

// sumElems sums elements lo..hi of every source into every destination.
// The pointers are the peers' buffers, each at least hi elements long
// (peerViews sliced them so).
func sumElems[T int8 | uint8 | int32 | uint32 | int64 | uint64 | float32 | float64](srcs, dsts []unsafe.Pointer, lo, hi int) {
	size := unsafe.Sizeof(*new(T))
	for i := uintptr(lo); i < uintptr(hi); i++ {
		v := *(*T)(unsafe.Add(srcs[0], i*size))
		for _, s := range srcs[1:] {
			v += *(*T)(unsafe.Add(s, i*size))
		}
		for _, d := range dsts {
			*(*T)(unsafe.Add(d, i*size)) = v
		}
	}
}

// sumHalves is sumElems for a 16-bit float: each sum in float32, rounded
// back to 16 bits after every addition (lib/reduce's semantics).
func sumHalves(srcs, dsts []unsafe.Pointer, lo, hi int, dec func(uint16) float32, enc func(float32) uint16) {
	for i := uintptr(lo); i < uintptr(hi); i++ {
		v := *(*uint16)(unsafe.Add(srcs[0], 2*i))
		for _, s := range srcs[1:] {
			v = enc(dec(v) + dec(*(*uint16)(unsafe.Add(s, 2*i))))
		}
		for _, d := range dsts {
			*(*uint16)(unsafe.Add(d, 2*i)) = v
		}
	}
}

// chunkBytes is -D 2's unit of work: a chunk of sums that stays in the
// first-level cache while it is stored to every peer.
const chunkBytes = 8 << 10

// allReduceD2 is allReduceLsaVectorizedKernel: the share in chunks, each
// summed over the peers in rank order by lib/reduce's vector loops, then
// copied to every peer.
func allReduceD2(c *coop) {
	l := c.l
	size := l.dt.Size()
	b := l.count * size
	c.peerViews(b, b)
	lo, hi := c.allReduceShare()
	k := c.kernel(l.dt)
	for at := lo * size; at < hi*size; at += chunkBytes {
		end := min(at+chunkBytes, hi*size)
		sum := c.tmp[:end-at]
		if len(c.srcs) == 1 {
			copy(sum, c.srcs[0][at:end])
		} else {
			k.Combine(sum, c.srcs[0][at:end], c.srcs[1][at:end], false)
			for _, s := range c.srcs[2:] {
				k.Combine(sum, sum, s[at:end], false)
			}
		}
		for _, d := range c.dsts {
			copy(d[at:end], sum)
		}
	}
}

// kernel is the sum kernel of type dt, made on first use.
func (c *coop) kernel(dt reduce.DataType) *reduce.Kernel {
	if c.kerns[dt] == nil {
		k, err := reduce.NewKernel(dt, reduce.Sum, 1, 1)
		if err != nil {
			panic(err) // every type has a sum (deviceTypes)
		}
		c.kerns[dt] = k
	}
	return c.kerns[dt]
}

// alltoAllStage runs before the first barrier: in place (the send and
// recv windows the same), it copies the coop's range of each of this
// rank's blocks aside, which the peers' stores are about to overwrite.
// nccl-tests' kernels run in place without it, the peers' stores racing
// with the rank's own loads (the result is unchecked there, N/A); here
// no peer stores into the range before this rank's coop arrives at the
// barrier, so the copy is whole, and the in-place result is right.
func alltoAllStage(c *coop) {
	l := c.l
	if !l.inPlace {
		return
	}
	size, n := l.dt.Size(), len(c.r.peerRecv)
	lo, hi := split(l.count, size, c.k, l.coops)
	rl, blk := (hi-lo)*size, l.count*size
	if cap(c.stage) < n*rl {
		c.stage = make([]byte, n*rl)
	}
	c.stage = c.stage[:n*rl]
	mine := c.r.peerRecv[c.r.d.LsaRank][l.sendOff:]
	for p := range n {
		copy(c.stage[p*rl:(p+1)*rl], mine[p*blk+lo*size:p*blk+hi*size])
	}
}

// alltoAllRanges points c.srcs[p] at the coop's range of this rank's
// block p (in place: its staged copy) and c.dsts[p] at the same range of
// peer p's recv block for this rank; it returns the range's elements.
func (c *coop) alltoAllRanges() int {
	l := c.l
	size, n := l.dt.Size(), len(c.r.peerRecv)
	lo, hi := split(l.count, size, c.k, l.coops)
	rl, blk := (hi-lo)*size, l.count*size
	me := c.r.d.LsaRank
	mine := c.r.peerSend[me][l.sendOff:]
	for p := range n {
		if l.inPlace {
			c.srcs[p] = c.stage[p*rl : (p+1)*rl]
		} else {
			c.srcs[p] = mine[p*blk+lo*size : p*blk+hi*size]
		}
		at := l.recvOff + me*blk
		c.dsts[p] = c.r.peerRecv[p][at+lo*size : at+hi*size]
	}
	return hi - lo
}

// alltoAllD1 is NvlAlltoAllKernel: element by element, this rank's block
// p stored into peer p's recv buffer at this rank's slot.
func alltoAllD1(c *coop) {
	elems := c.alltoAllRanges()
	if elems == 0 {
		return
	}
	n := len(c.dsts)
	srcs, dsts := c.ptrs[:n], c.ptrs[n:2*n]
	for p := range n {
		srcs[p], dsts[p] = unsafe.Pointer(unsafe.SliceData(c.srcs[p])), unsafe.Pointer(unsafe.SliceData(c.dsts[p]))
	}
	switch c.l.dt.Size() {
	case 1:
		storeElems[uint8](srcs, dsts, elems)
	case 2:
		storeElems[uint16](srcs, dsts, elems)
	case 4:
		storeElems[uint32](srcs, dsts, elems)
	case 8:
		storeElems[uint64](srcs, dsts, elems)
	}
}

// storeElems stores element i of srcs[p] into dsts[p], element by element
// (i outer, p inner, as nccl-tests' threads), for i below elems: every
// pointer has at least elems elements (alltoAllRanges sliced them so).
func storeElems[T uint8 | uint16 | uint32 | uint64](srcs, dsts []unsafe.Pointer, elems int) {
	size := unsafe.Sizeof(*new(T))
	for i := uintptr(0); i < uintptr(elems); i++ {
		for p, d := range dsts {
			*(*T)(unsafe.Add(d, i*size)) = *(*T)(unsafe.Add(srcs[p], i*size))
		}
	}
}

// alltoAllD2 is NvlAlltoAllKernelOptimized: the coop's range of every
// block in one copy per peer.
func alltoAllD2(c *coop) {
	c.alltoAllRanges()
	for p, d := range c.dsts {
		copy(d, c.srcs[p])
	}
}
