package bootstrap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/gccl/gccl/lib/internal/handshake"
)

// Wire format of the rendezvous (all integers little endian):
//
//	frame     = length u32 | type u8 | payload    (length counts type + payload)
//	open      = "gccl-bs3" | process's nonce [32] (process -> root: the first frame)
//	challenge = "gccl-bs3" | root's nonce [32] | root's proof [32]
//	busy      = (empty)                           (root -> process, for a challenge: try again)
//	proof     = process's proof [32]              (process -> root)
//	hello     = nranks u32 | ranks list | host str | hostid str | pid u32 | blob bytes | heartbeat_ms u32 | process u64
//	table     = index u32 | root's host str | root's pid u32 | root's process index i32 | nprocs u32 | nprocs x (ranks list | host str | hostid str | pid u32 | blob bytes)
//	refuse    = reason str                        (root -> process: the join failed; process -> root, for a proof: the root's proof failed)
//	coll      = seq u64 | kind u8 | root u32 | op u8 | data bytes
//	result    = seq u64 | count u32 | count x bytes (one per process for allgather, else one)
//	abort     = cause str                         (process -> root)
//	lost      = reason str                        (root -> processes: the job failed)
//	bye       = (empty)                           (process -> root: leaving on purpose)
//	ping      = (empty)                           (root -> process, every heartbeat/4 once all joined)
//	pong      = (empty)                           (process -> root: the answer to a ping)
//	clock     = id u64                            (process -> root: what does your clock say?)
//	time      = id u64 | ns u64                   (root -> process: its clock, read on receipt of clock id)
//
// A process joins with open, challenge, proof, hello, then waits for its
// table (or a refuse, or lost). No end ever sends the job's token: the
// root's proof is HMAC-SHA256(token, rootLabel | process's nonce | root's
// nonce), the process's the same with procLabel (lib/internal/handshake).
// The process checks the root's proof before it sends anything more, so a
// program squatting the root's port learns only a nonce; the root's fresh
// nonce makes a recorded proof worthless to replay. The root answers busy
// instead while maxUnauth connections are authenticating, and reads frames
// of at most preAuthFrame bytes until the proof checks out, maxFrame after.
//
// process is a random number drawn once per process (thisProcess): the
// root finds the joined process it runs in by it, and names it in the
// table (-1: none), so that a process that loses the root can say which
// ranks went with it (hostnames and pids do not tell: --hosts simulates
// several hosts on one, and pids repeat across hosts).
//
// heartbeat_ms is how long the process lets its link to the root stay
// silent before it calls the root lost; the root pings every process at a
// quarter of the smallest and calls a process lost after that much
// silence from it (a host unreachable, or a process stopped).
//
// list = count u32 | count x u32; str and bytes = length u32 | data.
const (
	// frameOpen is gccl-bs2's hello: a process of that version is told
	// apart by its magic.
	frameOpen byte = iota + 1
	frameTable
	frameRefuse
	frameColl
	frameResult
	frameAbort
	frameLost
	frameBye
	framePing
	framePong
	frameChallenge
	frameProof
	frameHello
	frameBusy
	frameClock
	frameTime
)

// wireMagic opens the open and challenge frames: the wire's version.
const wireMagic = "gccl-bs3"

// The labels of the root's and a process's proofs.
const (
	rootLabel = wireMagic + " root"
	procLabel = wireMagic + " process"
)

// maxFrame bounds a frame of an authenticated peer.
const maxFrame = 16 << 20

// preAuthFrame bounds a frame before the peer proved the token: open,
// challenge and proof are under 100 bytes, a refuse a sentence.
const preAuthFrame = 1 << 10

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

// frameSizeError is a frame longer than its reader takes.
type frameSizeError struct {
	typ   byte
	n     uint32 // the frame's length (type + payload)
	limit int
}

func (e *frameSizeError) Error() string {
	return fmt.Sprintf("bootstrap: frame length %d out of range 1..%d", e.n, e.limit)
}

// readFrame reads a frame of at most limit bytes (type + payload).
func readFrame(r io.Reader, limit int) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n < 1 || int64(n) > int64(limit) {
		return h[4], nil, &frameSizeError{typ: h[4], n: n, limit: limit}
	}
	p, err := readN(r, int(n-1))
	if err != nil {
		return 0, nil, err
	}
	return h[4], p, nil
}

// readN reads n bytes into a buffer that grows as they arrive: a peer
// that announces a large frame and sends little costs what it sent.
func readN(r io.Reader, n int) ([]byte, error) {
	const chunk = 64 << 10
	if n <= chunk {
		p := make([]byte, n)
		_, err := io.ReadFull(r, p)
		return p, err
	}
	var b bytes.Buffer
	got, err := b.ReadFrom(io.LimitReader(r, int64(n)))
	if err == nil && got < int64(n) {
		err = io.ErrUnexpectedEOF
	}
	return b.Bytes(), err
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

// open is a process's first frame; challenge the root's answer.
type open struct{ nonce [handshake.NonceBytes]byte }

type challenge struct {
	nonce [handshake.NonceBytes]byte
	proof [handshake.ProofBytes]byte
}

func (o open) encode() []byte { return append([]byte(wireMagic), o.nonce[:]...) }

func (c challenge) encode() []byte {
	return append(append([]byte(wireMagic), c.nonce[:]...), c.proof[:]...)
}

// errOtherVersion is a gccl peer of another wire version.
type errOtherVersion struct{ magic string }

func (e errOtherVersion) Error() string {
	return fmt.Sprintf("bootstrap: a gccl of another version (wire %q; this one speaks %q)", e.magic, wireMagic)
}

// checkMagic strips the magic off p: another gccl version's, or no gccl
// at all, is an error saying which.
func checkMagic(p []byte) ([]byte, error) {
	if len(p) >= len(wireMagic) && string(p[:len(wireMagic)]) == wireMagic {
		return p[len(wireMagic):], nil
	}
	if m := p[:min(len(p), len(wireMagic))]; len(m) == len(wireMagic) && strings.HasPrefix(string(m), "gccl-bs") && isPrint(m) {
		return nil, errOtherVersion{string(m)}
	}
	return nil, errors.New("bootstrap: not a gccl bootstrap connection (wrong magic)")
}

func isPrint(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

func decodeOpen(p []byte) (open, error) {
	var o open
	rest, err := checkMagic(p)
	if err != nil {
		return o, err
	}
	if len(rest) != len(o.nonce) {
		return o, fmt.Errorf("bootstrap: an open of %d bytes: want %d", len(p), len(wireMagic)+len(o.nonce))
	}
	copy(o.nonce[:], rest)
	return o, nil
}

func decodeChallenge(p []byte) (challenge, error) {
	var c challenge
	rest, err := checkMagic(p)
	if err != nil {
		return c, err
	}
	if len(rest) != len(c.nonce)+len(c.proof) {
		return c, fmt.Errorf("bootstrap: a challenge of %d bytes: want %d", len(p), len(wireMagic)+len(c.nonce)+len(c.proof))
	}
	copy(c.nonce[:], rest)
	copy(c.proof[:], rest[len(c.nonce):])
	return c, nil
}

// rootProof and procProof are the proofs of a connection whose process
// sent nonce pn and root rn.
func rootProof(token [tokenBytes]byte, pn, rn [handshake.NonceBytes]byte) [handshake.ProofBytes]byte {
	return handshake.Proof(token[:], rootLabel, pn[:], rn[:])
}

func procProof(token [tokenBytes]byte, pn, rn [handshake.NonceBytes]byte) [handshake.ProofBytes]byte {
	return handshake.Proof(token[:], procLabel, pn[:], rn[:])
}

// hello is a process's request to join, sent once both ends proved the
// token.
type hello struct {
	nranks    int
	info      ProcInfo      // with Ranks
	heartbeat time.Duration // the silence this process tolerates (0: none)
	process   uint64        // the joining process's thisProcess
}

func (h hello) encode() []byte {
	var e enc
	e.u32(uint32(h.nranks))
	e.list(h.info.Ranks)
	e.str(h.info.Host)
	e.str(h.info.HostID)
	e.u32(uint32(h.info.Pid))
	e.bytes(h.info.Blob)
	e.u32(uint32(min(h.heartbeat.Milliseconds(), math.MaxUint32)))
	e.u64(h.process)
	return e.Bytes()
}

// decodeHello is total: any input gives a hello or an error.
func decodeHello(p []byte) (hello, error) {
	var h hello
	d := dec{b: p}
	h.nranks = int(d.u32())
	h.info.Ranks = d.list()
	h.info.Host = d.str()
	h.info.HostID = d.str()
	h.info.Pid = int(d.u32())
	h.info.Blob = d.bytes()
	h.heartbeat = time.Duration(d.u32()) * time.Millisecond
	h.process = d.u64()
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

// rootProc is where the root runs: its host and pid, and the index of
// its process among the job's (-1 when it runs in none of them).
type rootProc struct {
	host  string
	pid   int
	index int
}

func encodeTable(index int, root rootProc, procs []ProcInfo) []byte {
	var e enc
	e.u32(uint32(index))
	e.str(root.host)
	e.u32(uint32(root.pid))
	e.u32(uint32(int32(root.index)))
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
	root := rootProc{host: d.str(), pid: int(d.u32()), index: int(int32(d.u32()))}
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
	if root.index < -1 || root.index >= len(procs) {
		return 0, root, nil, fmt.Errorf("bootstrap: the root's process index %d of %d processes", root.index, len(procs))
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
