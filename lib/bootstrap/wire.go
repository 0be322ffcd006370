package bootstrap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// Wire format of the rendezvous (all integers little endian):
//
//	frame   = length u32 | type u8 | payload      (length counts type + payload, <= maxFrame)
//	hello   = "gccl-bs2" | token [32] | nranks u32 | ranks list | host str | hostid str | pid u32 | blob bytes | heartbeat_ms u32
//	table   = index u32 | root's host str | root's pid u32 | nprocs u32 | nprocs x (ranks list | host str | hostid str | pid u32 | blob bytes)
//	refuse  = reason str                          (root -> process: the join failed)
//	coll    = seq u64 | kind u8 | root u32 | op u8 | data bytes
//	result  = seq u64 | count u32 | count x bytes (one per process for allgather, else one)
//	abort   = cause str                           (process -> root)
//	lost    = reason str                          (root -> processes: the job failed)
//	bye     = (empty)                             (process -> root: leaving on purpose)
//	ping    = (empty)                             (root -> process, every heartbeat/4 once all joined)
//	pong    = (empty)                             (process -> root: the answer to a ping)
//
// heartbeat_ms is how long the process lets its link to the root stay
// silent before it calls the root lost; the root pings every process at a
// quarter of the smallest and calls a process lost after that much
// silence from it (a host unreachable, or a process stopped).
//
// list = count u32 | count x u32; str and bytes = length u32 | data.
const (
	frameHello byte = iota + 1
	frameTable
	frameRefuse
	frameColl
	frameResult
	frameAbort
	frameLost
	frameBye
	framePing
	framePong
)

const helloMagic = "gccl-bs2"

// maxFrame bounds a frame: a peer cannot make the root allocate more.
const maxFrame = 16 << 20

// maxRanks bounds a job's ranks.
const maxRanks = 1 << 16

func writeFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload)+1 > maxFrame {
		return fmt.Errorf("bootstrap: a %d-byte message exceeds the %d-byte frame limit", len(payload), maxFrame)
	}
	b := make([]byte, 5+len(payload))
	binary.LittleEndian.PutUint32(b, uint32(1+len(payload)))
	b[4] = typ
	copy(b[5:], payload)
	_, err := w.Write(b)
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n < 1 || n > maxFrame {
		return 0, nil, fmt.Errorf("bootstrap: frame length %d out of range 1..%d", n, maxFrame)
	}
	p := make([]byte, n-1)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	return h[4], p, nil
}

// enc builds a payload.
type enc struct{ bytes.Buffer }

func (e *enc) u8(v byte)    { e.WriteByte(v) }
func (e *enc) u32(v uint32) { e.Write(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *enc) u64(v uint64) { e.Write(binary.LittleEndian.AppendUint64(nil, v)) }
func (e *enc) bytes(b []byte) {
	e.u32(uint32(len(b)))
	e.Write(b)
}
func (e *enc) str(s string) { e.bytes([]byte(s)) }
func (e *enc) list(v []int) {
	e.u32(uint32(len(v)))
	for _, x := range v {
		e.u32(uint32(x))
	}
}

// dec reads a payload; the first error sticks, and every read after it
// returns zero values: decoders check err once at the end.
type dec struct {
	b   []byte
	err error
}

var errShort = errors.New("bootstrap: message too short")

func (d *dec) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errShort
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
func (d *dec) u8() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}
func (d *dec) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}
func (d *dec) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}
func (d *dec) bytes() []byte {
	n := d.u32()
	if d.err != nil || int64(n) > int64(len(d.b)) {
		d.err = errShort
		return nil
	}
	return append([]byte(nil), d.take(int(n))...)
}
func (d *dec) str() string { return string(d.bytes()) }
func (d *dec) list() []int {
	n := d.u32()
	if d.err != nil || int64(n)*4 > int64(len(d.b)) {
		d.err = errShort
		return nil
	}
	v := make([]int, n)
	for i := range v {
		v[i] = int(d.u32())
	}
	return v
}
func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		return fmt.Errorf("bootstrap: %d stray bytes after a message", len(d.b))
	}
	return d.err
}

// hello is a process's request to join.
type hello struct {
	token     [tokenBytes]byte
	nranks    int
	info      ProcInfo      // with Ranks
	heartbeat time.Duration // the silence this process tolerates (0: none)
}

func (h hello) encode() []byte {
	var e enc
	e.WriteString(helloMagic)
	e.Write(h.token[:])
	e.u32(uint32(h.nranks))
	e.list(h.info.Ranks)
	e.str(h.info.Host)
	e.str(h.info.HostID)
	e.u32(uint32(h.info.Pid))
	e.bytes(h.info.Blob)
	e.u32(uint32(min(h.heartbeat.Milliseconds(), math.MaxUint32)))
	return e.Bytes()
}

// decodeHello is total: any input gives a hello or an error.
func decodeHello(p []byte) (hello, error) {
	var h hello
	d := dec{b: p}
	if string(d.take(len(helloMagic))) != helloMagic {
		return h, errors.New("bootstrap: not a gccl hello (wrong magic or version)")
	}
	copy(h.token[:], d.take(tokenBytes))
	h.nranks = int(d.u32())
	h.info.Ranks = d.list()
	h.info.Host = d.str()
	h.info.HostID = d.str()
	h.info.Pid = int(d.u32())
	h.info.Blob = d.bytes()
	h.heartbeat = time.Duration(d.u32()) * time.Millisecond
	if err := d.done(); err != nil {
		return h, err
	}
	if h.nranks < 1 || h.nranks > maxRanks {
		return h, fmt.Errorf("bootstrap: %d ranks: want 1 to %d", h.nranks, maxRanks)
	}
	if len(h.info.Ranks) == 0 {
		return h, errors.New("bootstrap: a process with no ranks")
	}
	for _, r := range h.info.Ranks {
		if r < 0 || r >= h.nranks {
			return h, fmt.Errorf("bootstrap: rank %d out of range 0..%d", r, h.nranks-1)
		}
	}
	return h, nil
}

// rootProc is where the root runs: its host and pid.
type rootProc struct {
	host string
	pid  int
}

func encodeTable(index int, root rootProc, procs []ProcInfo) []byte {
	var e enc
	e.u32(uint32(index))
	e.str(root.host)
	e.u32(uint32(root.pid))
	e.u32(uint32(len(procs)))
	for _, p := range procs {
		e.list(p.Ranks)
		e.str(p.Host)
		e.str(p.HostID)
		e.u32(uint32(p.Pid))
		e.bytes(p.Blob)
	}
	return e.Bytes()
}

func decodeTable(b []byte) (int, rootProc, []ProcInfo, error) {
	d := dec{b: b}
	index := int(d.u32())
	root := rootProc{host: d.str(), pid: int(d.u32())}
	n := d.u32()
	if d.err != nil || int64(n) > int64(len(d.b)) {
		return 0, root, nil, errShort
	}
	procs := make([]ProcInfo, n)
	for i := range procs {
		procs[i].Ranks = d.list()
		procs[i].Host = d.str()
		procs[i].HostID = d.str()
		procs[i].Pid = int(d.u32())
		procs[i].Blob = d.bytes()
	}
	if err := d.done(); err != nil {
		return 0, root, nil, err
	}
	if index < 0 || index >= len(procs) {
		return 0, root, nil, fmt.Errorf("bootstrap: table index %d of %d processes", index, len(procs))
	}
	return index, root, procs, nil
}

// Collective kinds.
const (
	collBarrier byte = iota + 1
	collAllGather
	collBroadcast
	collAllReduceF64
	collAllReduceI64
)

var collNames = map[byte]string{collBarrier: "Barrier", collAllGather: "AllGather", collBroadcast: "Broadcast",
	collAllReduceF64: "AllReduceFloat64", collAllReduceI64: "AllReduceInt64"}

type coll struct {
	seq  uint64
	kind byte
	root int
	op   ReduceOp
	data []byte
}

func (c coll) encode() []byte {
	var e enc
	e.u64(c.seq)
	e.u8(c.kind)
	e.u32(uint32(c.root))
	e.u8(byte(c.op))
	e.bytes(c.data)
	return e.Bytes()
}

func decodeColl(b []byte) (coll, error) {
	d := dec{b: b}
	c := coll{seq: d.u64(), kind: d.u8(), root: int(d.u32()), op: ReduceOp(d.u8()), data: d.bytes()}
	if err := d.done(); err != nil {
		return c, err
	}
	if collNames[c.kind] == "" {
		return c, fmt.Errorf("bootstrap: unknown collective %d", c.kind)
	}
	return c, nil
}

func encodeResult(seq uint64, parts [][]byte) []byte {
	var e enc
	e.u64(seq)
	e.u32(uint32(len(parts)))
	for _, p := range parts {
		e.bytes(p)
	}
	return e.Bytes()
}

func decodeResult(b []byte) (uint64, [][]byte, error) {
	d := dec{b: b}
	seq := d.u64()
	n := d.u32()
	if d.err != nil || int64(n)*4 > int64(len(d.b)) {
		return 0, nil, errShort
	}
	parts := make([][]byte, n)
	for i := range parts {
		parts[i] = d.bytes()
	}
	return seq, parts, d.done()
}

func encodeStr(s string) []byte {
	var e enc
	e.str(s)
	return e.Bytes()
}

func decodeStr(b []byte) (string, error) {
	d := dec{b: b}
	s := d.str()
	return s, d.done()
}

// ReduceOp is the reduction of AllReduceFloat64 and AllReduceInt64.
type ReduceOp byte

const (
	Sum ReduceOp = iota
	Max
	Min
)

// reduceF64 folds b into a (little-endian float64 vectors of one length).
func reduceF64(a, b []byte, op ReduceOp) {
	for i := 0; i+8 <= len(a) && i+8 <= len(b); i += 8 {
		x := math.Float64frombits(binary.LittleEndian.Uint64(a[i:]))
		y := math.Float64frombits(binary.LittleEndian.Uint64(b[i:]))
		switch op {
		case Max:
			x = math.Max(x, y)
		case Min:
			x = math.Min(x, y)
		default:
			x += y
		}
		binary.LittleEndian.PutUint64(a[i:], math.Float64bits(x))
	}
}

func reduceI64(a, b []byte, op ReduceOp) {
	for i := 0; i+8 <= len(a) && i+8 <= len(b); i += 8 {
		x := int64(binary.LittleEndian.Uint64(a[i:]))
		y := int64(binary.LittleEndian.Uint64(b[i:]))
		switch op {
		case Max:
			x = max(x, y)
		case Min:
			x = min(x, y)
		default:
			x += y
		}
		binary.LittleEndian.PutUint64(a[i:], uint64(x))
	}
}
