package history

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gccl/gccl/ci"
)

// A Filter selects runs; an empty field selects every value.
type Filter struct {
	Commit  string
	Branch  string
	Machine string
}

// where is the filter as SQL conditions on the runs table r.
func (f Filter) where() (string, []any) {
	var conds []string
	var args []any
	for _, c := range []struct{ col, v string }{{"commit_sha", f.Commit}, {"branch", f.Branch}, {"machine", f.Machine}} {
		if c.v != "" {
			conds = append(conds, "r."+c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if len(conds) == 0 {
		return "1", nil
	}
	return strings.Join(conds, " AND "), args
}

// Runs lists the runs the filter selects, oldest first (by time, then by
// the order they were added), with their record counts.
func (s *Store) Runs(f Filter) ([]Run, error) {
	where, args := f.where()
	rows, err := s.db.Query(`SELECT r.id, r.commit_sha, r.branch, r.time_ns, r.machine, r.tool, r.meta,
		(SELECT count(*) FROM records c WHERE c.run_id = r.id)
		FROM runs r WHERE `+where+` ORDER BY r.time_ns, r.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", s.path, err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var ns int64
		var meta string
		if err := rows.Scan(&r.ID, &r.Commit, &r.Branch, &ns, &r.Machine, &r.Tool, &meta, &r.Records); err != nil {
			return nil, fmt.Errorf("history: %s: %w", s.path, err)
		}
		r.Time = time.Unix(0, ns).UTC()
		if meta != "" {
			if err := json.Unmarshal([]byte(meta), &r.Meta); err != nil {
				return nil, fmt.Errorf("history: %s: run %d's meta: %w", s.path, r.ID, err)
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: %s: %w", s.path, err)
	}
	return out, nil
}

// keyColumns are the records' key columns in ci.Key's order of comparison
// (the gate's: group fields, placement, size).
const keyColumns = `c.collective, c.type, c.op, c.algorithm, c.protocol, c.channels, c.buffsize, c.nranks, c.nhosts, c.placement, c.size`

// Keys lists the keys of the records of the runs the filter selects, each
// once, in the gate's order (group fields, placement, then size).
func (s *Store) Keys(f Filter) ([]ci.Key, error) {
	where, args := f.where()
	rows, err := s.db.Query(`SELECT DISTINCT `+keyColumns+`
		FROM records c JOIN runs r ON r.id = c.run_id WHERE `+where+` ORDER BY `+keyColumns, args...)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", s.path, err)
	}
	defer rows.Close()
	var out []ci.Key
	for rows.Next() {
		var k ci.Key
		if err := rows.Scan(&k.Collective, &k.Type, &k.Op, &k.Algorithm, &k.Protocol, &k.Channels, &k.BuffSize,
			&k.NRanks, &k.NHosts, &k.Placement, &k.Size); err != nil {
			return nil, fmt.Errorf("history: %s: %w", s.path, err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: %s: %w", s.path, err)
	}
	return out, nil
}

// A Point is one run's value of a key.
type Point struct {
	RunID  int64
	Commit string
	Time   time.Time
	// Value is the gate's value of the key in this run (ci.ValueOf: the
	// median time, or busbw from it), the median over the run's records
	// of the key when it has several (-N cycles).
	Value float64
	// Fastest is the run's fastest iteration of the key in the metric
	// (ci.FastestOf: the least time, or the most busbw, over its
	// records); 0 unless every record of the key knew it.
	Fastest float64
	// Samples are the per-iteration values in the metric, pooled over the
	// run's records of the key, ascending; nil unless every one of them
	// recorded its iterations.
	Samples []float64
	// Records is how many of the run's records gave the value.
	Records int
}

// Series is one key's values over the runs the filter selects, oldest
// first (by run time, then by the order the runs were added), in metric m
// under normalisation n, as the gate computes them (ci.ValueOf). Runs
// whose records of the key cannot give the metric (no time; no
// ref_copy_gbps under ci.NormCopy) have no point.
func (s *Store) Series(key ci.Key, m ci.Metric, n ci.Normalization, f Filter) ([]Point, error) {
	where, args := f.where()
	args = append([]any{key.Collective, key.Type, key.Op, key.Algorithm, key.Protocol, key.Channels, key.BuffSize,
		key.NRanks, key.NHosts, key.Placement, key.Size}, args...)
	rows, err := s.db.Query(`SELECT r.id, r.commit_sha, r.time_ns, c.time_us, c.median_us, c.busbw_gbps, c.ref_copy_gbps, c.samples, c.min_us
		FROM records c JOIN runs r ON r.id = c.run_id
		WHERE (`+keyColumns+`) = (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) AND `+where+`
		ORDER BY r.time_ns, r.id, c.seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", s.path, err)
	}
	defer rows.Close()
	var out []Point
	var values []float64 // the current point's record values
	allIters := true     // every record of the current point had samples
	allFastest := true   // every record of the current point knew its fastest iteration
	end := func() {
		if len(values) == 0 {
			return
		}
		p := &out[len(out)-1]
		p.Value, p.Records = median(values), len(values)
		if allIters {
			slices.Sort(p.Samples)
		} else {
			p.Samples = nil
		}
		if !allFastest {
			p.Fastest = 0
		}
		values, allIters, allFastest = values[:0], true, true
	}
	for rows.Next() {
		var id, ns int64
		var commit string
		var blob []byte
		r := record{Key: key}
		if err := rows.Scan(&id, &commit, &ns, &r.TimeUs, &r.MedianUs, &r.BusBw, &r.RefCopy, &blob, &r.MinUs); err != nil {
			return nil, fmt.Errorf("history: %s: %w", s.path, err)
		}
		if r.Samples, err = decodeSamples(blob); err != nil {
			return nil, fmt.Errorf("history: %s: run %d: %w", s.path, id, err)
		}
		v, iters, ok := ci.ValueOf(r.asRecord(), m, n)
		if !ok {
			continue
		}
		if len(out) == 0 || out[len(out)-1].RunID != id {
			end()
			out = append(out, Point{RunID: id, Commit: commit, Time: time.Unix(0, ns).UTC()})
		}
		values = append(values, v)
		p := &out[len(out)-1]
		if f, ok := ci.FastestOf(r.asRecord(), m, n); !ok {
			allFastest = false
		} else if p.Fastest == 0 || (m.HigherIsBetter() == (f > p.Fastest)) {
			p.Fastest = f
		}
		if iters == nil {
			allIters = false
		}
		p.Samples = append(p.Samples, iters...)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: %s: %w", s.path, err)
	}
	end()
	return out, nil
}

// median of values (not sorted; sorted here in place).
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	return (v[(n-1)/2] + v[n/2]) / 2
}
