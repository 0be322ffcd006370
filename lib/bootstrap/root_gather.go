// root_gather.go: the collectives the root relays: every process's part,
// combined in process order once the last arrives.

package bootstrap

import (
	"fmt"
	"slices"
)

// gather is one collective's contributions.
type gather struct {
	kind  byte
	root  int
	op    ReduceOp
	parts [][]byte // by process index
	n     int
}

// contribute adds a process's part of a collective; the last part
// completes it.
func (r *Root) contribute(m *member, c coll) {
	r.mu.Lock()
	if r.failed != "" || r.procs == nil {
		r.mu.Unlock()
		return
	}
	g := r.pending[c.seq]
	if g == nil {
		g = &gather{kind: c.kind, root: c.root, op: c.op, parts: make([][]byte, len(r.procs))}
		r.pending[c.seq] = g
	}
	if g.kind != c.kind || g.root != c.root || g.op != c.op || g.parts[m.index] != nil {
		r.mu.Unlock()
		r.fail(fmt.Sprintf("collective %d: %v called %s (root %d, op %d) where another process called %s (root %d, op %d)",
			c.seq, m.info, collNames[c.kind], c.root, c.op, collNames[g.kind], g.root, g.op))
		return
	}
	g.parts[m.index] = append(c.data, 0)[:len(c.data)] // non-nil even when empty
	g.n++
	if g.n < len(r.procs) {
		r.mu.Unlock()
		return
	}
	delete(r.pending, c.seq)
	procs := r.procs
	r.mu.Unlock()
	res, err := complete(g)
	if err != "" {
		r.fail(fmt.Sprintf("collective %d (%s): %s", c.seq, collNames[g.kind], err))
		return
	}
	msg := encodeResult(c.seq, res)
	for _, p := range procs {
		p.send(frameResult, msg)
	}
}

// complete computes a collective's result from every process's part, in
// process order (so every process gets bit-identical floats).
func complete(g *gather) ([][]byte, string) {
	switch g.kind {
	case collBarrier:
		return nil, ""
	case collAllGather:
		return g.parts, ""
	case collBroadcast:
		if g.root < 0 || g.root >= len(g.parts) {
			return nil, fmt.Sprintf("root %d out of range 0..%d", g.root, len(g.parts)-1)
		}
		return [][]byte{g.parts[g.root]}, ""
	default:
		acc := slices.Clone(g.parts[0])
		for i, p := range g.parts[1:] {
			if len(p) != len(acc) {
				return nil, fmt.Sprintf("process %d gave %d values, process 0 %d", i+1, len(p)/8, len(acc)/8)
			}
			if g.kind == collAllReduceF64 {
				reduceF64(acc, p, g.op)
			} else {
				reduceI64(acc, p, g.op)
			}
		}
		return [][]byte{acc}, ""
	}
}
