//go:build amd64 && !race

package proto

// storeRelaxed64 is a plain 8-byte store (MOVQ): atomic as a whole and, on
// x86's total store order, never reordered with the writer's other stores:
// the release store NCCL's LL protocol relies on (a volatile 8-byte store).
// Go's atomic.StoreUint64 is an XCHG, a full barrier that costs ~20 cycles
// per store. Being an assembly call, it is also a compiler barrier.
//
//go:noescape
func storeRelaxed64(addr *uint64, v uint64)

// storeFullLines writes lines x 8 payload bytes from data as LL lines at
// words, each word one plain 8-byte store, in order (as storeRelaxed64):
// StoreLines' whole lines in one call rather than two per line.
//
//go:noescape
func storeFullLines(words *uint64, data *byte, lines int, flag uint64)
