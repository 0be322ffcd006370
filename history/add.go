package history

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gccl/gccl/results"
)

// Add stores a run of records in one transaction and returns its id.
// Fields the run leaves zero are taken from the records (see Run): Time
// from their earliest timestamp, Machine from their host when they name
// one, Tool from their tools, Meta from their provenance. A run already
// in the store (the same content: the same commit, time, machine, tool and
// records) is not added again: its id is returned with added false.
func (s *Store) Add(run Run, recs []results.Record) (id int64, added bool, err error) {
	e, err := entryOf(run, recs)
	if err != nil {
		return 0, false, fmt.Errorf("history: %w", err)
	}
	err = s.write(func(w *writer) error {
		id, added, err = w.insert(e)
		return err
	})
	return id, added, err
}

// write runs f in one write transaction, committed when f succeeds. The
// transaction takes the write lock when it begins (BEGIN IMMEDIATE), and
// waits up to the busy timeout for another writer's.
func (s *Store) write(f func(*writer) error) error {
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("history: %s: %w", s.path, err)
	}
	defer tx.Rollback() // after Commit, a no-op
	w, err := newWriter(tx)
	if err != nil {
		return fmt.Errorf("history: %s: %w", s.path, err)
	}
	defer w.close()
	if err := f(w); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: %s: %w", s.path, err)
	}
	return nil
}

// writer holds a transaction's prepared statements.
type writer struct {
	find, run, rec *sql.Stmt
}

func newWriter(tx *sql.Tx) (*writer, error) {
	w := &writer{}
	var err error
	if w.find, err = tx.Prepare(`SELECT id FROM runs WHERE hash = ?`); err != nil {
		return nil, err
	}
	if w.run, err = tx.Prepare(`INSERT INTO runs (commit_sha, branch, time_ns, machine, tool, meta, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?)`); err != nil {
		w.close()
		return nil, err
	}
	if w.rec, err = tx.Prepare(`INSERT INTO records (run_id, seq, collective, type, op, algorithm, protocol,
		channels, buffsize, nranks, nhosts, size, placement, time_us, median_us, busbw_gbps, ref_copy_gbps, samples, min_us)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *writer) close() {
	for _, s := range []*sql.Stmt{w.find, w.run, w.rec} {
		if s != nil {
			s.Close()
		}
	}
}

// insert stores a normalised entry unless a run of the same content is
// there.
func (w *writer) insert(e entry) (int64, bool, error) {
	h, err := e.hash()
	if err != nil {
		return 0, false, err
	}
	var id int64
	switch err := w.find.QueryRow(h).Scan(&id); err {
	case nil:
		return id, false, nil
	case sql.ErrNoRows:
	default:
		return 0, false, err
	}
	meta := ""
	if e.Meta != nil {
		b, err := json.Marshal(e.Meta)
		if err != nil {
			return 0, false, err
		}
		meta = string(b)
	}
	res, err := w.run.Exec(e.Commit, e.Branch, e.Time.UnixNano(), e.Machine, e.Tool, meta, h)
	if err != nil {
		return 0, false, err
	}
	if id, err = res.LastInsertId(); err != nil {
		return 0, false, err
	}
	for i, r := range e.Records {
		k := r.Key
		if _, err := w.rec.Exec(id, i, k.Collective, k.Type, k.Op, k.Algorithm, k.Protocol,
			k.Channels, k.BuffSize, k.NRanks, k.NHosts, k.Size, k.Placement,
			r.TimeUs, r.MedianUs, r.BusBw, r.RefCopy, encodeSamples(r.Samples), r.MinUs); err != nil {
			return 0, false, err
		}
	}
	return id, true, nil
}

// queryer is a *sql.DB or a *sql.Tx.
type queryer interface {
	Query(query string, args ...any) (*sql.Rows, error)
	QueryRow(query string, args ...any) *sql.Row
}

// readEntry reads a run back in its stored form. Without withMin it reads
// only the columns of schema version 1, so migrations before version 3
// (which added min_us) may use it.
func readEntry(q queryer, id int64, withMin bool) (entry, error) {
	e := entry{Format: exportFormat}
	var ns int64
	var meta string
	err := q.QueryRow(`SELECT commit_sha, branch, time_ns, machine, tool, meta FROM runs WHERE id = ?`, id).
		Scan(&e.Commit, &e.Branch, &ns, &e.Machine, &e.Tool, &meta)
	if err != nil {
		return entry{}, fmt.Errorf("run %d: %w", id, err)
	}
	e.Time = time.Unix(0, ns).UTC()
	if meta != "" {
		if err := json.Unmarshal([]byte(meta), &e.Meta); err != nil {
			return entry{}, fmt.Errorf("run %d: its meta: %w", id, err)
		}
	}
	minCol := "0"
	if withMin {
		minCol = "min_us"
	}
	rows, err := q.Query(`SELECT collective, type, op, algorithm, protocol, channels, buffsize, nranks, nhosts,
		size, placement, time_us, median_us, busbw_gbps, ref_copy_gbps, samples, `+minCol+`
		FROM records WHERE run_id = ? ORDER BY seq`, id)
	if err != nil {
		return entry{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var r record
		var blob []byte
		k := &r.Key
		if err := rows.Scan(&k.Collective, &k.Type, &k.Op, &k.Algorithm, &k.Protocol, &k.Channels, &k.BuffSize,
			&k.NRanks, &k.NHosts, &k.Size, &k.Placement, &r.TimeUs, &r.MedianUs, &r.BusBw, &r.RefCopy, &blob, &r.MinUs); err != nil {
			return entry{}, fmt.Errorf("run %d: %w", id, err)
		}
		if r.Samples, err = decodeSamples(blob); err != nil {
			return entry{}, fmt.Errorf("run %d: %w", id, err)
		}
		e.Records = append(e.Records, r)
	}
	return e, rows.Err()
}
