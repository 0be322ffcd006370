// Checking a point's results: data built so that the exact result is known
// (prepare), the -c checks, --check-timed's slots, and -B's bitwise
// comparison of repeated runs.

package perf

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/bits"

	"github.com/gccl/gccl/lib/exact"
	"github.com/gccl/gccl/lib/reduce"
)

// checkOnce fills inputs, runs one operation on every rank and counts the
// wrong output elements.
func (r *runner) checkOnce(p point, inPlace bool, seed uint64) (int64, error) {
	if err := r.prepare(r.comms, p, inPlace, seed, 0); err != nil {
		return 0, err
	}
	if err := r.runAll(p, inPlace); err != nil {
		return 0, err
	}
	return r.verify(r.comms, p, inPlace, seed, 0)
}

// runAll runs one operation on every rank, each thread driving its ranks.
func (r *runner) runAll(p point, inPlace bool) error {
	errs := make([]error, r.o.Threads)
	r.onThreads(func(th int) { errs[th] = r.callAll(r.threadComms(th), p, inPlace) })
	return errors.Join(errs...)
}

// callAll runs one operation on each of a thread's ranks, at rotation
// slot 0, and waits for them.
func (r *runner) callAll(cs []Comm, p point, inPlace bool) error {
	grouped := threadGroups(cs)
	if grouped {
		if err := cs[0].GroupStart(); err != nil {
			return err
		}
	}
	var err error
	for _, c := range cs {
		if err = r.call(c, &p, inPlace, 0); err != nil {
			break
		}
	}
	if grouped {
		if endErr := cs[0].GroupEnd(); err == nil {
			err = endErr
		}
	}
	if err != nil {
		return err
	}
	return complete(cs)
}

// poison is written over outputs before a checked run, so a run that
// writes nothing cannot pass on stale results.
const poison = 0xA5

// prepareSlots prepares every slot an iteration of -m operations uses.
func (r *runner) prepareSlots(cs []Comm, p point, inPlace bool, seed uint64) error {
	for a := 0; a < r.o.AggIters; a++ {
		if err := r.prepare(cs, p, inPlace, seed, a); err != nil {
			return err
		}
	}
	return nil
}

// prepare writes the inputs of ranks cs for a check of p at rotation slot
// and poisons their outputs (on the device too, for a backend that has
// one).
func (r *runner) prepare(cs []Comm, p point, inPlace bool, seed uint64, slot int) error {
	for _, c := range cs {
		send, recv := r.views(c.Rank(), &p, inPlace, r.slotShift(&p, slot))
		for i := range recv {
			recv[i] = poison
		}
		// In place the input lands on (part of) the poisoned output.
		r.t.fill(r.dataArgs(c.Rank(), p, seed), send)
		if err := toDevice(c, recv, send); err != nil {
			return fmt.Errorf("rank %d: %w", c.Rank(), err)
		}
	}
	return nil
}

// verify compares the outputs of ranks cs with the exact expected values.
func (r *runner) verify(cs []Comm, p point, inPlace bool, seed uint64, slot int) (int64, error) {
	var wrong int64
	ulps := 0
	if p.op == reduce.Avg && p.dt.IsFloat() {
		ulps = 2 // another backend may average as a pre-multiplied sum
	}
	for _, c := range cs {
		a := r.dataArgs(c.Rank(), p, seed)
		a.expect = r.bufs[c.Rank()-r.base].expect
		want := r.t.want(a)
		if want == nil {
			continue
		}
		_, recv := r.views(c.Rank(), &p, inPlace, r.slotShift(&p, slot))
		if err := toHost(c, recv[:len(want)]); err != nil {
			return 0, fmt.Errorf("rank %d: %w", c.Rank(), err)
		}
		w, _ := exact.Compare(recv[:len(want)], want, p.dt, ulps)
		wrong += int64(w)
	}
	return wrong, nil
}

func (r *runner) dataArgs(rank int, p point, seed uint64) dataArgs {
	return dataArgs{dt: p.dt, op: p.op, seed: seed, rank: rank, n: r.n(), count: p.param, root: p.root}
}

// bitwise runs the operation -K more times on the same inputs and counts
// the output bits that differ from the first run.
func (r *runner) bitwise(p point, inPlace bool, seed uint64) (int64, error) {
	ref := make([][]byte, len(r.comms))
	for l := range ref {
		ref[l] = r.bufs[l].ref
	}
	var diff int64
	for k := 0; k <= r.o.Bitwise; k++ {
		if err := r.prepare(r.comms, p, inPlace, seed, 0); err != nil {
			return 0, err
		}
		if err := r.runAll(p, inPlace); err != nil {
			return 0, err
		}
		for _, c := range r.comms {
			_, recv := r.views(c.Rank(), &p, inPlace, r.unalignBytes(&p))
			if err := toHost(c, recv); err != nil {
				return 0, fmt.Errorf("rank %d: %w", c.Rank(), err)
			}
			l := c.Rank() - r.base
			if k == 0 {
				ref[l] = append(ref[l][:0], recv...)
				continue
			}
			for i := range recv {
				diff += int64(bits.OnesCount8(recv[i] ^ ref[l][i]))
			}
		}
	}
	return diff, nil
}

// pointSeed derives the data seed of a point, so every row checks fresh data.
func pointSeed(p point, inPlace bool) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, p.size, p.dt, p.op, p.root, inPlace)
	return h.Sum64()
}
