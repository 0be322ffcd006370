package history

import (
	"database/sql"
	"fmt"
	"strconv"
)

// A migration takes a database from the version before it to its own.
type migration struct {
	version int
	apply   func(tx *sql.Tx) error
}

// migrations, in order; migrations[i] makes version i+1. A schema change
// is a new entry at the end, never an edit of one already released.
var migrations = []migration{
	{1, createV1},
	{2, addRunHash},
	{3, addMinTime},
}

// currentVersion is the schema this package reads and writes.
var currentVersion = migrations[len(migrations)-1].version

// createV1 is the first schema: the meta table, runs, and their records
// with the gate's key and values.
func createV1(tx *sql.Tx) error {
	return execAll(tx,
		`CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`CREATE TABLE runs (
			id INTEGER PRIMARY KEY,
			commit_sha TEXT NOT NULL,
			branch TEXT NOT NULL,
			time_ns INTEGER NOT NULL,
			machine TEXT NOT NULL,
			tool TEXT NOT NULL,
			meta TEXT NOT NULL
		)`,
		`CREATE TABLE records (
			run_id INTEGER NOT NULL REFERENCES runs(id),
			seq INTEGER NOT NULL,
			collective TEXT NOT NULL,
			type TEXT NOT NULL,
			op TEXT NOT NULL,
			algorithm TEXT NOT NULL,
			protocol TEXT NOT NULL,
			channels INTEGER NOT NULL,
			buffsize INTEGER NOT NULL,
			nranks INTEGER NOT NULL,
			nhosts INTEGER NOT NULL,
			size INTEGER NOT NULL,
			placement TEXT NOT NULL,
			time_us REAL NOT NULL,
			median_us REAL NOT NULL,
			busbw_gbps REAL NOT NULL,
			ref_copy_gbps REAL NOT NULL,
			samples BLOB,
			PRIMARY KEY (run_id, seq)
		) WITHOUT ROWID`,
		`CREATE INDEX records_key ON records
			(collective, type, op, algorithm, protocol, channels, buffsize, nranks, nhosts, placement, size)`,
	)
}

// addRunHash gives every run its content hash (the identity that import
// dedupes on), computed for the runs already there, and orders runs by
// time.
func addRunHash(tx *sql.Tx) error {
	if err := execAll(tx, `ALTER TABLE runs ADD COLUMN hash TEXT NOT NULL DEFAULT ''`); err != nil {
		return err
	}
	ids, err := runIDs(tx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		e, err := readEntry(tx, id, false)
		if err != nil {
			return err
		}
		h, err := e.hash()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE runs SET hash = ? WHERE id = ?`, h, id); err != nil {
			return err
		}
	}
	// Version 1 did not dedupe: identical runs (same content, so nothing
	// is lost) are kept once, the earliest, before the hash turns unique.
	if _, err := tx.Exec(`DELETE FROM records WHERE run_id IN
		(SELECT id FROM runs r WHERE EXISTS (SELECT 1 FROM runs o WHERE o.hash = r.hash AND o.id < r.id))`); err != nil {
		return err
	}
	if _, err := tx.Exec(`DELETE FROM runs WHERE EXISTS
		(SELECT 1 FROM runs o WHERE o.hash = runs.hash AND o.id < runs.id)`); err != nil {
		return err
	}
	return execAll(tx,
		`CREATE UNIQUE INDEX runs_hash ON runs (hash)`,
		`CREATE INDEX runs_time ON runs (time_ns, id)`,
	)
}

// addMinTime keeps each record's fastest iteration (min_us), the value of
// a series under ci.StatFastest; runs added before it have 0 there (none
// known). A run's hash leaves min_us out, so the runs already stored keep
// theirs and are found when their files are added again.
func addMinTime(tx *sql.Tx) error {
	return execAll(tx, `ALTER TABLE records ADD COLUMN min_us REAL NOT NULL DEFAULT 0`)
}

func execAll(tx *sql.Tx, stmts ...string) error {
	for _, q := range stmts {
		if _, err := tx.Exec(q); err != nil {
			return err
		}
	}
	return nil
}

func runIDs(tx *sql.Tx) ([]int64, error) {
	rows, err := tx.Query(`SELECT id FROM runs ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// migrate creates or upgrades the schema in one write transaction. It
// reads the state again inside it: another process may have done the work
// while this one waited for the lock.
func (s *Store) migrate() error {
	return s.migrateTo(currentVersion)
}

// migrateTo applies the migrations up to version (tests make older files
// with it).
func (s *Store) migrateTo(version int) error {
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("history: %s: %w", s.path, err)
	}
	defer tx.Rollback() // after Commit, a no-op
	st, err := s.state(tx)
	if err != nil {
		return err
	}
	if st.version >= version {
		return nil // done by another process while this one waited
	}
	for _, m := range migrations {
		if m.version <= st.version || m.version > version {
			continue
		}
		if err := m.apply(tx); err != nil {
			return fmt.Errorf("history: %s: migrating to schema version %d: %w", s.path, m.version, err)
		}
	}
	if _, err := tx.Exec(`INSERT INTO meta (name, value) VALUES ('schema_version', ?), ('application', 'gccl history')
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, strconv.Itoa(version)); err != nil {
		return fmt.Errorf("history: %s: %w", s.path, err)
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
		return fmt.Errorf("history: %s: %w", s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: %s: %w", s.path, err)
	}
	return nil
}
