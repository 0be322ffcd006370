// The run loop: every configuration, cycle, type, op, root and size in
// nccl-tests' order, one after another or --interleave'd, each point measured.

package perf

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

// runConfigs runs every configuration, side by side or one after another.
func (e *engine) runConfigs(configs []RunConfig, sizes []int64, ops []reduce.Op, roots []int, label bool) (int, error) {
	if e.o.Interleave {
		for _, g := range interleaveGroups(configs) {
			if code, err := e.runInterleaved(g, sizes, ops, roots, label); err != nil {
				return code, err
			}
		}
		return exitOK, nil
	}
	for _, rc := range configs {
		// Before its communicators are made: a stopped run makes none.
		if stop, err := e.stopAsked(); err != nil || stop {
			return exitStack, cmp.Or(err, errInterrupted)
		}
		if code, err := e.runConfig(rc, sizes, ops, roots, label); err != nil {
			return code, err
		}
	}
	return exitOK, nil
}

// runConfig runs every cycle, type, op, root and size of one configuration.
func (e *engine) runConfig(rc RunConfig, sizes []int64, ops []reduce.Op, roots []int, label bool) (code int, err error) {
	o := e.o
	comms, err := e.be.Init(e.n, rc)
	if err != nil {
		return exitInvalidUsage, fmt.Errorf("config %s: %w", rc.Label(), err)
	}
	defer func() {
		for _, c := range comms {
			c.Destroy()
		}
	}()
	r, err := e.newRunner(comms)
	if err != nil {
		return exitCode(err), err
	}
	defer func() {
		if cerr := r.close(err == nil); cerr != nil && err == nil {
			code, err = exitStack, fmt.Errorf("releasing the windows: %w", cerr)
		}
	}()
	if err := e.warmUp(r, sizes, ops, roots, nil); err != nil {
		return exitCode(err), err
	}
	if label {
		fmt.Fprintf(e.out, "# Config: %s\n", rc.Label())
	}
	fmt.Fprint(e.out, resultHeader(o.CPUTime != 0, o.Timestamps != 0, o.PerIter != 0, o.Bitwise > 0))
	err = e.eachPoint(sizes, ops, roots, func(p point) error {
		if err := e.runPoint(r, rc, p); err != nil {
			return err
		}
		e.prog.step()
		return nil
	})
	if err != nil {
		return exitCode(err), err
	}
	return exitOK, nil
}

// eachPoint calls f for every cycle, type, op, root and size, in
// nccl-tests' order, until f fails.
func (e *engine) eachPoint(sizes []int64, ops []reduce.Op, roots []int, f func(point) error) error {
	o := e.o
	for cycle := 0; o.Cycles == 0 || cycle < o.Cycles; cycle++ {
		for _, dt := range o.Types {
			for _, op := range ops {
				for _, root := range roots {
					for _, size := range sizes {
						if stop, err := e.stopAsked(); err != nil || stop {
							return cmp.Or(err, errInterrupted)
						}
						p := newPoint(e.t, size, dt, op, root, e.n)
						if err := f(p); err != nil {
							if errors.Is(err, errInterrupted) {
								e.cut = fmt.Sprintf("the size in progress (%s %s) was stopped unfinished and dropped", results.SizeLabel(p.bytes), p.dt)
							}
							return err
						}
						if e.intr != nil {
							e.intr.points.Add(1)
						}
					}
				}
			}
		}
	}
	return nil
}

// runInterleaved runs every cycle, type, op, root and size of configs on
// one set of communicators, measuring the configurations side by side at
// each size (runner.measureInterleaved). Records go out as each size is
// done; the table of each configuration prints at the end, as runConfig's
// would.
func (e *engine) runInterleaved(configs []RunConfig, sizes []int64, ops []reduce.Op, roots []int, label bool) (code int, err error) {
	o := e.o
	start := configs[0]
	start.Proto, start.Algo, start.NChannels = tuning.ProtoReq{}, tuning.AlgoReq{}, 0
	start.MaxNChannels = 1
	forces := make([]ccl.Forced, len(configs))
	for i, rc := range configs {
		forces[i] = forcedOf(rc)
		start.MaxNChannels = max(start.MaxNChannels, rc.NChannels, forces[i].MaxNChannels)
	}
	comms, err := e.be.Init(e.n, start)
	if err != nil {
		return exitInvalidUsage, fmt.Errorf("interleaved configs: %w", err)
	}
	defer func() {
		for _, c := range comms {
			c.Destroy()
		}
	}()
	r, err := e.newRunner(comms)
	if err != nil {
		return exitCode(err), err
	}
	defer func() {
		if cerr := r.close(err == nil); cerr != nil && err == nil {
			code, err = exitStack, fmt.Errorf("releasing the windows: %w", cerr)
		}
	}()
	if err := e.warmUp(r, sizes, ops, roots, forces); err != nil {
		return exitCode(err), err
	}
	rows := make([][]string, len(configs))
	err = e.eachPoint(sizes, ops, roots, func(p point) error {
		var ms [2][]measurement
		for k, inPlace := range e.placements() {
			var err error
			if ms[k], err = r.measureInterleaved(p, inPlace, forces); err != nil {
				return fmt.Errorf("interleaved configs: %w", err)
			}
		}
		for i, rc := range configs {
			var mine [2]*measurement
			for k := range ms {
				if ms[k] != nil {
					mine[k] = &ms[k][i]
				}
			}
			row, err := e.pointRow(rc, p, mine)
			if err != nil {
				return err
			}
			rows[i] = append(rows[i], row)
			e.prog.step()
		}
		return nil
	})
	if err != nil {
		return exitCode(err), err
	}
	for i, rc := range configs {
		if label {
			fmt.Fprintf(e.out, "# Config: %s\n", rc.Label())
		}
		fmt.Fprint(e.out, resultHeader(o.CPUTime != 0, o.Timestamps != 0, o.PerIter != 0, o.Bitwise > 0))
		for _, row := range rows[i] {
			fmt.Fprintln(e.out, row)
		}
	}
	return exitOK, nil
}

// runPoint measures both placements of one point and prints its row.
func (e *engine) runPoint(r *runner, rc RunConfig, p point) error {
	var ms [2]*measurement
	for k, inPlace := range e.placements() {
		m, err := r.measure(p, inPlace)
		if err != nil {
			return err
		}
		ms[k] = &m
	}
	row, err := e.pointRow(rc, p, ms)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.out, row)
	return nil
}

// placements are the placements measured: out of place, then in place
// unless --out-of-place-only.
func (e *engine) placements() []bool {
	if e.o.OutOfPlaceOnly {
		return []bool{false}
	}
	return []bool{false, true}
}
