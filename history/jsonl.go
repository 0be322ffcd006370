package history

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Export writes every run, oldest first, as JSON Lines: one run a line
// with its records (the format is in the package doc). It reads in one
// transaction, so a run added meanwhile is either whole or absent.
func (s *Store) Export(w io.Writer) (runs int, err error) {
	// A read transaction (BEGIN DEFERRED): writers go on beside it.
	tx, err := s.db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("history: %s: %w", s.path, err)
	}
	defer tx.Rollback() // nothing to commit
	rows, err := tx.Query(`SELECT id FROM runs ORDER BY time_ns, id`)
	if err != nil {
		return 0, fmt.Errorf("history: %s: %w", s.path, err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("history: %s: %w", s.path, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("history: %s: %w", s.path, err)
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw) // one value a line
	for _, id := range ids {
		e, err := readEntry(tx, id, true)
		if err != nil {
			return runs, fmt.Errorf("history: %s: %w", s.path, err)
		}
		if err := enc.Encode(e); err != nil {
			return runs, err
		}
		runs++
	}
	return runs, bw.Flush()
}

// ImportStats says what an Import did.
type ImportStats struct {
	Added      int // runs added
	Duplicates int // runs already in the store (or twice in the input), skipped
}

// Import reads runs written by Export and adds those the store does not
// hold (by content: see Add). It is one transaction: a bad line adds
// nothing, and the error names the line. name labels the input in errors.
func (s *Store) Import(r io.Reader, name string) (ImportStats, error) {
	var st ImportStats
	err := s.write(func(w *writer) error {
		br := bufio.NewReader(r)
		for line := 1; ; line++ {
			b, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(b)) > 0 {
				e, perr := parseLine(b)
				if perr != nil {
					return fmt.Errorf("history: %s:%d: %w", name, line, perr)
				}
				_, added, ierr := w.insert(e)
				if ierr != nil {
					return fmt.Errorf("history: %s:%d: %w", name, line, ierr)
				}
				if added {
					st.Added++
				} else {
					st.Duplicates++
				}
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("history: reading %s: %w", name, err)
			}
		}
	})
	if err != nil {
		return ImportStats{}, err
	}
	return st, nil
}

// parseLine reads one exported run, refusing unknown fields (a line of
// another format, or a results file given by mistake) and checking it.
func parseLine(b []byte) (entry, error) {
	var e entry
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return entry{}, fmt.Errorf("not a history export line (tune history export writes them): %w", err)
	}
	if dec.More() {
		return entry{}, errors.New("more than one JSON value on the line")
	}
	if err := e.normalize(); err != nil {
		return entry{}, err
	}
	return e, nil
}
