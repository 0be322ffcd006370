package results

import (
	"io"
	"math"
	"slices"
)

// WriteNCCLJSON writes recs as one nccl-tests -J document (version 3); args
// is the command line for "args". It is NCCLDocument then WriteNCCLDocument;
// a harness that knows more (warmup iterations, the -G flag, a checked
// average bandwidth) edits the pieces in between.
func WriteNCCLJSON(w io.Writer, recs []Record, args []string) error {
	hdr, rows, foot := NCCLDocument(recs, args)
	return WriteNCCLDocument(w, hdr, rows, foot)
}

// WriteNCCLDocument writes a whole document through NCCLJSONWriter.
func WriteNCCLDocument(w io.Writer, hdr NCCLHeader, rows []NCCLRow, foot NCCLFooter) error {
	nw, err := NewNCCLJSONWriter(w, hdr)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := nw.AddRow(r.Key, r.Out, r.In); err != nil {
			return err
		}
	}
	return nw.Close(foot)
}

// NCCLRow is one result row: its key and its two placements (nil: null).
type NCCLRow struct {
	Key     NCCLRowKey
	Out, In *NCCLRowResult
}

// NCCLDocument builds an nccl-tests -J document from records:
//
//   - the header comes from the first record (start_time: the earliest
//     Timestamp; env: its Env; nthreads 1, ngpus NRanks/NProcs, devices:
//     NProcs entries on Host; the sweep step inferred from the sizes);
//     warmup_iters, graph and the blocking/parallel flags are left zero;
//   - records that differ only in Placement share a row, in the order their
//     first record came; a row without an out-of-place record has
//     "out_of_place":null, likewise in-place; a placement the row already
//     has (the next of -N cycles) starts a new row, as nccl-tests prints;
//   - experiment_name is the collective's nccl-tests name ("AllReduce"), so
//     that a reader can tell the collective whatever the program was;
//   - the per-iteration report comes from MinUs/MaxUs/MedianUs/P99Us and
//     IterTimesUs (the rest computed as nccl-tests does);
//   - out_of_bounds counts the wrong elements; average_bus_bandwidth is the
//     mean busBw over all placements, like nccl-tests, not checked (okay
//     null); EndTime is left zero (the writer writes now).
func NCCLDocument(recs []Record, args []string) (NCCLHeader, []NCCLRow, NCCLFooter) {
	var hdr NCCLHeader
	hdr.Args = args
	if len(recs) == 0 {
		hdr.Config.NThreads, hdr.Config.NGPUs = 1, 1
		return hdr, nil, NCCLFooter{}
	}
	first := recs[0]
	hdr.Env = first.Env
	for _, r := range recs {
		if !r.Timestamp.IsZero() && (hdr.StartTime.IsZero() || r.Timestamp.Before(hdr.StartTime)) {
			hdr.StartTime = r.Timestamp
		}
	}
	nprocs := max(first.NProcs, 1)
	if first.NRanks%nprocs != 0 {
		nprocs = 1
	}
	c := &hdr.Config
	c.NThreads, c.NGPUs = 1, first.NRanks/nprocs
	c.Iterations, c.AggIters = first.Iterations, max(first.AggIters, 1)
	for p := range nprocs {
		c.Devices = append(c.Devices, NCCLDevice{Rank: p * c.NGPUs, Hostname: first.Host, DeviceInfo: first.CPU})
	}

	type rowKey struct {
		coll, typ, op string
		root          int
		size, count   int64
		iters         int // a row carries one actual_iterations for both placements
	}
	index := map[rowKey]int{}
	var rows []NCCLRow
	var sizes []int64
	var bwSum float64
	var bwN int
	var foot NCCLFooter
	for _, r := range recs {
		k := rowKey{r.Collective, r.Type, r.Op, r.Root, r.Size, r.Count, r.Iterations}
		i, ok := index[k]
		if ok && (r.Placement == InPlace && rows[i].In != nil || r.Placement != InPlace && rows[i].Out != nil) {
			ok = false // a repeat: its own row, not over the first
		}
		if !ok {
			name := r.Collective
			if t, ok := testByCollective(r.Collective); ok {
				name = t.testColl
			}
			i = len(rows)
			index[k] = i
			rows = append(rows, NCCLRow{Key: NCCLRowKey{Size: r.Size, Count: r.Count, Type: r.Type,
				RedOp: r.Op, Root: r.Root, ActualIters: r.Iterations, ExperimentName: name}})
			sizes = append(sizes, r.Size)
		}
		res := &NCCLRowResult{TimeUs: r.TimeUs, AlgBw: r.AlgBw, BusBw: r.BusBw, Wrong: r.Wrong, PerIter: perIterFromRecord(r)}
		if r.Placement == InPlace {
			rows[i].In = res
		} else {
			rows[i].Out = res
		}
		if r.Wrong >= 0 {
			c.Validation = 1
			foot.OutOfBounds += int(r.Wrong)
		}
		c.PerIterTiming = c.PerIterTiming || res.PerIter != nil
		bwSum += r.BusBw
		bwN++
	}
	foot.AvgBusBw = bwSum / float64(bwN)
	c.MinBytes, c.MaxBytes = slices.Min(sizes), slices.Max(sizes)
	c.StepFactor, c.StepBytes = sweepStep(sizes)
	return hdr, rows, foot
}

// sweepStep infers nccl-tests' -f / -i from the sizes: a constant integer
// ratio is a step factor, a constant difference a step in bytes; otherwise
// (one size, irregular sweeps) step_bytes 0.
func sweepStep(sizes []int64) (factor, bytes int64) {
	s := slices.Clone(sizes)
	slices.Sort(s)
	s = slices.Compact(s)
	if len(s) < 2 {
		return 0, 0
	}
	factor, bytes = -1, s[1]-s[0]
	if s[0] > 0 && s[1]%s[0] == 0 {
		factor = s[1] / s[0]
	}
	for i := 2; i < len(s); i++ {
		if factor > 1 && (s[i-1] == 0 || s[i] != s[i-1]*factor) {
			factor = -1
		}
		if bytes > 0 && s[i]-s[i-1] != bytes {
			bytes = 0
		}
	}
	if factor > 1 {
		return factor, 0
	}
	return 0, bytes
}

// perIterFromRecord builds the per-iteration report from what the record
// measured: its own statistics where set, the rest computed from
// IterTimesUs the way nccl-tests does; nil when it has neither.
func perIterFromRecord(r Record) *NCCLPerIter {
	if len(r.IterTimesUs) == 0 && r.MinUs == 0 && r.MaxUs == 0 && r.MedianUs == 0 && r.P99Us == 0 {
		return nil
	}
	p := &NCCLPerIter{TimesUs: r.IterTimesUs}
	if n := len(r.IterTimesUs); n > 0 {
		s := slices.Clone(r.IterTimesUs)
		slices.Sort(s)
		pct := func(q int) float64 { return s[min(n-1, (n*q+99)/100-1)] }
		var sum, sq float64
		for _, v := range s {
			sum += v
		}
		avg := sum / float64(n)
		for _, v := range s {
			sq += (v - avg) * (v - avg)
		}
		p.MinUs, p.MaxUs, p.AvgUs = s[0], s[n-1], avg
		p.P50Us, p.P95Us, p.P99Us = s[n/2], pct(95), pct(99)
		p.StdevUs = math.Sqrt(sq / float64(n))
		if avg > 0 {
			p.CVPct = p.StdevUs / avg * 100
		}
	}
	override := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	override(&p.MinUs, r.MinUs)
	override(&p.MaxUs, r.MaxUs)
	override(&p.P50Us, r.MedianUs)
	override(&p.P99Us, r.P99Us)
	return p
}
