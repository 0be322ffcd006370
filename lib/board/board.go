// Package board is the memory of the one-shot and two-shot algorithms: a
// board where every rank posts its input once, as LL lines (data and flag in one
// word), for every peer to read. A rank's part of the board is an ack word
// and Slots slots used in turn, round after round; a round's flag is its
// sequence number, so a slot is reused without a clean-up pass and a reader
// sees a whole line or none of it.
//
// The board is only memory and the rules to read and write it: who waits,
// wakes and reduces is the caller's (lib/ccl). It holds no Go pointers in
// the words, so a rank's part may live in a segment shared by processes.
package board

import (
	"sync/atomic"
	"unsafe"

	"github.com/gccl/gccl/lib/board/layout"
	"github.com/gccl/gccl/lib/proto"
)

const (
	// Slots is how many rounds a rank may post ahead of its slowest
	// reader: a poster of round s needs every reader done with round
	// s-Slots (CanPost).
	Slots = 8

	slotWords = layout.RoundBytes / layout.LineBytes * 2
	ackWords  = 8 // the ack word, alone on its cache line
	// A plain slot: its flag word alone on a cache line, then up to
	// layout.RoundBytes of payload as is (see PutPlain).
	plainFlagWords = 8
	plainSlotWords = plainFlagWords + layout.RoundBytes/8
	// RankWords is the size of one rank's part in 8-byte words.
	RankWords = ackWords + Slots*slotWords + Slots*plainSlotWords
	// RankBytes is RankWords in bytes.
	RankBytes = RankWords * 8

	// cleanPeriod: a round whose sequence is within Slots of a multiple
	// of it rewrites its whole slot, so that no word keeps a flag old
	// enough to alias a future round once the 32-bit flags wrap (as NCCL's
	// LL clean mask). A power of two.
	cleanPeriod = 1 << 27
)

// Board is every rank's part of the one-shot memory.
type Board struct {
	parts [][]uint64        // per rank: RankWords words
	slots [][Slots][]uint64 // per rank, its parts' slots, sliced once
	plain [][Slots][]uint64 // per rank, its plain slots (flag line, payload)
	// flagMask keeps the low bits of a round's sequence as its flag;
	// tests shrink it to make the flags wrap within a few hundred rounds.
	flagMask uint64
	clean    uint64 // cleanPeriod, or a small one in tests; a power of two
}

// NewBoard is the board over parts[r], rank r's RankWords words (zeroed:
// round 0 is never posted, so a zero flag is never awaited before it wraps).
func NewBoard(parts [][]uint64) *Board {
	for _, p := range parts {
		if len(p) != RankWords {
			panic("board: NewBoard: a rank's part must be RankWords words")
		}
	}
	slots := make([][Slots][]uint64, len(parts))
	plain := make([][Slots][]uint64, len(parts))
	for r, p := range parts {
		for k := range Slots {
			slots[r][k] = p[ackWords+k*slotWords : ackWords+(k+1)*slotWords]
			at := ackWords + Slots*slotWords + k*plainSlotWords
			plain[r][k] = p[at : at+plainSlotWords]
		}
	}
	return &Board{parts: parts, slots: slots, plain: plain, flagMask: 0xffffffff, clean: cleanPeriod}
}

// Lines is the LL lines n payload bytes take.
func Lines(n int) int { return (n + layout.LineBytes - 1) / layout.LineBytes }

func (b *Board) flag(seq uint64) uint64 { return seq & b.flagMask }

func (b *Board) slot(r int, seq uint64) []uint64 { return b.slots[r][seq%Slots] }

// Put writes data as rank r's lines of round seq from line off on. The
// caller posts a round's every segment, then a full barrier, before it
// wakes the readers (see Publish). The lines of data and off
// must fit the slot: (off + Lines(len(data))) * layout.LineBytes <= layout.RoundBytes.
func (b *Board) Put(r int, seq uint64, off int, data []byte) {
	words := b.slot(r, seq)[2*off:]
	flag := b.flag(seq) << 32
	w, i, n := 0, 0, len(data)
	if blocks := n / (2 * layout.LineBytes); vectorLines && blocks > 0 {
		_ = words[4*blocks-1] // the slot holds them (bounds check)
		packLines(&words[0], &data[0], blocks, flag)
		w, i = 4*blocks, 2*layout.LineBytes*blocks
	}
	proto.StoreLines(words[w:], data[i:], flag)
}

// Publish ends rank r's round seq after its Puts: it refreshes the rest
// of the slot when the round is due a cleaning. used is the lines the
// round's Puts wrote. It makes no barrier: before the poster reads a
// reader's sleeping word to wake it (the Dekker pair of proto.Waiter), it
// makes one of its own (a locked instruction), as late as it can, so that
// the wait for its stores to leave this core overlaps its own reads.
func (b *Board) Publish(r int, seq uint64, used int) {
	if seq&(b.clean-1) < Slots { // seq % clean, without a division
		words := b.slot(r, seq)
		flag := b.flag(seq) << 32
		for w := 2 * used; w < len(words); w++ {
			proto.StoreWord(&words[w], flag)
		}
	}
}

// Arrived reports whether rank r's line at off of round seq is there.
func (b *Board) Arrived(r int, seq uint64, off int) bool {
	words := b.slot(r, seq)
	f := uint32(b.flag(seq))
	return uint32(atomic.LoadUint64(&words[2*off])>>32) == f && uint32(atomic.LoadUint64(&words[2*off+1])>>32) == f
}

// Get copies len(dst) payload bytes of rank r's round seq from line off on
// into dst. It returns -1, or the first line (relative to off) whose flags
// are not yet the round's: dst is then partly written and the caller waits
// for that line (Arrived) and calls Get again.
func (b *Board) Get(r int, seq uint64, off int, dst []byte) int {
	words := b.slot(r, seq)[2*off:]
	f := uint32(b.flag(seq))
	n := len(dst)
	i, w := 0, 0
	if blocks := n / (2 * layout.LineBytes); vectorLines && blocks > 0 {
		_ = words[4*blocks-1]
		if done := unpackLines(&dst[0], &words[0], blocks, f); done < 2*blocks {
			return done
		}
		i, w = 2*layout.LineBytes*blocks, 4*blocks
	}
	for ; i < n; i, w = i+layout.LineBytes, w+2 {
		w0 := atomic.LoadUint64(&words[w])
		w1 := atomic.LoadUint64(&words[w+1])
		if uint32(w0>>32) != f || uint32(w1>>32) != f {
			return w / 2
		}
		proto.LinePayload(dst[i:], w0, w1)
	}
	return -1
}

// Prefetch hints the cache lines of rank r's post of round seq, lines
// [off, off+lines), into this core's cache, up to MaxPrefetch of them: a
// reader of many posts then waits for their misses side by side rather
// than one after another. Only a hint: Get still checks every flag.
func (b *Board) Prefetch(r int, seq uint64, off, lines int) {
	words := b.slot(r, seq)[2*off:]
	n := min((2*lines*8+63)/64, MaxPrefetch, (len(words)*8+63)/64)
	if n > 0 {
		prefetchLines(&words[0], n)
	}
}

// MaxPrefetch is the most cache lines Prefetch hints per post: a 64-byte
// payload's. Measured on a 16-core Xeon, 4-16 ranks: the hint of a post's
// first lines made 8 ranks' 8 B one-shots a little faster; hinting 16
// lines made 4 ranks' 512 B slower, the hint racing the writer through its
// lines (docs/log/performance-2026-11.md 12g).
const MaxPrefetch = 2

// Plain posts: a round's payload as is in a slot of its own, then one flag
// word, the round's whole sequence (so it never wraps), stored after the
// payload. A reader that sees the flag reads the payload where it lies:
// no flag per line to write or check, half the bytes of LL lines through
// the caches, and the reduction reads the post directly. The price is a
// second dependent miss (the flag, then the payload), which LL lines
// avoid: plain posts pay from a few hundred bytes on (lib/ccl picks).
// Plain and LL posts use separate memory, so a payload's bits can never
// pass for an LL flag.

// PlainMax is the most payload bytes one plain post holds.
const PlainMax = layout.RoundBytes

// PutPlain copies data as rank r's plain post of round seq, from byte off
// on (off+len(data) <= PlainMax). The caller publishes the round after its
// Puts (PublishPlain), and makes a full barrier before it looks at its
// readers' sleeping words, as for LL posts.
func (b *Board) PutPlain(r int, seq uint64, off int, data []byte) {
	copy(b.plainPayload(r, seq)[off:], data)
}

// PublishPlain ends rank r's plain post of round seq: its flag, after the
// payload.
func (b *Board) PublishPlain(r int, seq uint64) {
	atomic.StoreUint64(&b.plain[r][seq%Slots][0], seq)
}

// PlainArrived reports whether rank r's plain post of round seq is there.
func (b *Board) PlainArrived(r int, seq uint64) bool {
	return atomic.LoadUint64(&b.plain[r][seq%Slots][0]) == seq
}

// Plain is rank r's plain post of round seq, bytes [off, off+n): read it
// only after PlainArrived, and only until the round is acknowledged.
func (b *Board) Plain(r int, seq uint64, off, n int) []byte {
	return b.plainPayload(r, seq)[off : off+n]
}

func (b *Board) plainPayload(r int, seq uint64) []byte {
	w := b.plain[r][seq%Slots][plainFlagWords:]
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), PlainMax)
}

// Ack records that rank r has read everything it needs of round seq.
// Written by rank r's runner only; read by the ranks it read from.
func (b *Board) Ack(r int, seq uint64) { atomic.StoreUint64(&b.parts[r][0], seq) }

// Acked is the last round rank r acknowledged.
func (b *Board) Acked(r int) uint64 { return atomic.LoadUint64(&b.parts[r][0]) }

// Free reports whether round seq may overwrite its slot: every rank has
// acknowledged round seq-Slots, the slot's last user. Ranks that read
// nothing in a round still acknowledge it, so the check holds for every
// collective.
func Free(seq, minAcked uint64) bool { return seq <= Slots || minAcked >= seq-Slots }

// The two-shot allreduce (tuning.TwoShot) splits each round's elements
// into one block per rank. A round's post is its elements in order, as
// one-shot's; block b starts on a line of its own, so rank b reads its
// block of every post from that line, and posts its reduced block again
// in the next round, at line 0.

// TwoShotBlock is rank b's block of a two-shot round of cnt elements of
// elt bytes on n ranks: the round's elements [lo, hi). Blocks are as even
// as whole line pairs allow, in rank order; the last may be short or
// empty. cnt must fit the round: cnt*elt <= n*layout.TwoShotSegment(n).
func TwoShotBlock(cnt, n, elt, b int) (lo, hi int) {
	grain := max(2*layout.LineBytes/elt, 1) // elements per line pair
	blk := (cnt + n - 1) / n
	blk = (blk + grain - 1) / grain * grain
	lo = min(b*blk, cnt)
	return lo, min(lo+blk, cnt)
}
