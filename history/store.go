package history

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver: pure Go, no cgo
)

// Sentinel errors of Open; match them with errors.Is.
var (
	// ErrNotHistory: the file is not a gccl history (another program's
	// SQLite database, a file that is not SQLite, or a damaged one). It is
	// left as it was.
	ErrNotHistory = errors.New("not a gccl history database")
	// ErrNewerSchema: the file was written by a newer gccl, whose schema
	// this one does not know. It is left as it was.
	ErrNewerSchema = errors.New("history written by a newer gccl")
	// ErrNoHistory: the file does not exist and Options.Create is off.
	ErrNoHistory = errors.New("no history database")
)

// applicationID marks a gccl history in the SQLite header (PRAGMA
// application_id, bytes 68-71): "gccl" in ASCII.
const applicationID = 0x6763636c

// sqliteMagic starts every SQLite 3 database file.
const sqliteMagic = "SQLite format 3\x00"

// DefaultBusyTimeout is how long a writer waits for another's transaction
// before giving up: generous, since a CI job adding 10,000 records holds
// the lock for well under a second.
const DefaultBusyTimeout = 60 * time.Second

// Options of Open.
type Options struct {
	// Create makes a new history when the file does not exist (or is
	// empty); without it a missing file is ErrNoHistory.
	Create bool
	// BusyTimeout is how long to wait for another writer's lock; 0 means
	// DefaultBusyTimeout.
	BusyTimeout time.Duration
}

// A Store is an open history. Its methods may be called from several
// goroutines: database/sql pools the connections, and SQLite serialises
// the writers.
type Store struct {
	// All set by Open, read only after: no lock.
	db   *sql.DB
	path string
	busy time.Duration // the busy timeout
}

// Open opens the history at path, creating it when missing and
// opts.Create is set, and migrating an older schema. A file that is not a
// gccl history, or was written by a newer gccl, is refused (ErrNotHistory,
// ErrNewerSchema) and left byte for byte as it was.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("history: no database file given")
	}
	fresh, err := checkFile(path, opts.Create)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", path, err)
	}
	timeout := opts.BusyTimeout
	if timeout <= 0 {
		timeout = DefaultBusyTimeout
	}
	db, err := sql.Open("sqlite", dsn(abs, timeout, fresh))
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", path, err)
	}
	s := &Store{db: db, path: path, busy: timeout}
	if err := s.prepare(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the store. The last connection to close checkpoints the
// WAL into the file, so a closed history is one file to copy or cache.
func (s *Store) Close() error { return s.db.Close() }

// Path is the file the store was opened from.
func (s *Store) Path() string { return s.path }

// dsn is the driver's name for the file: a file: URI (the path escaped, so
// '?' or '#' in a name stay part of it) with connection settings that
// change nothing in the file: the busy timeout, write transactions that
// take the lock when they begin (BEGIN IMMEDIATE: two writers never
// deadlock upgrading a read lock), synchronous=NORMAL (safe in WAL mode
// against a crash of the process). mode=rw unless the file is to be made:
// a file removed between the check and the open is then an error, not a
// new database.
func dsn(abs string, timeout time.Duration, create bool) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(timeout.Milliseconds(), 10))
	q.Set("_txlock", "immediate")
	q.Add("_pragma", "synchronous(NORMAL)")
	if !create {
		q.Set("mode", "rw")
	}
	return u.String() + "?" + q.Encode()
}

// checkFile looks at the file before SQLite does, reading only: a file
// that is not SQLite, or SQLite marked as another program's, is refused
// here. fresh reports a file that is missing or empty (to be created).
func checkFile(path string, create bool) (fresh bool, err error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if !create {
			return false, fmt.Errorf("history: %s: %w (tune history add makes one)", path, ErrNoHistory)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("history: %w", err)
	case st.IsDir():
		return false, fmt.Errorf("history: %s is a directory: want a database file", path)
	case st.Size() == 0:
		if !create {
			return false, fmt.Errorf("history: %s is empty: %w (tune history add makes one)", path, ErrNoHistory)
		}
		return true, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	head := make([]byte, 100) // the SQLite header
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false, fmt.Errorf("history: %s: %w", path, err)
	}
	head = head[:n]
	if !bytes.HasPrefix(head, []byte(sqliteMagic)) {
		return false, fmt.Errorf("history: %s: %w: not a SQLite file (it starts %q); give a history made by tune history add, or a new file name", path, ErrNotHistory, printable(head[:min(n, 16)]))
	}
	if n < 100 {
		return false, fmt.Errorf("history: %s: %w: a SQLite header cut short (%d bytes): the file is damaged", path, ErrNotHistory, n)
	}
	// A nonzero application id other than ours is another program's
	// database. Zero may be a history created a moment ago whose first page
	// still sits in the WAL: prepare looks through SQLite.
	if id := binary.BigEndian.Uint32(head[68:72]); id != 0 && id != applicationID {
		return false, fmt.Errorf("history: %s: %w: a SQLite database of another application (application id %#x)", path, ErrNotHistory, id)
	}
	return false, nil
}

// printable quotes the start of a foreign file for a message.
func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}

// prepare checks the database through SQLite, then creates or migrates its
// schema when it must, and turns on WAL. Nothing is written before the
// file has proved to be a history (or empty).
func (s *Store) prepare() error {
	st, err := s.state(s.db)
	if err != nil {
		return err
	}
	if st.version != currentVersion {
		if err := s.migrate(); err != nil {
			return err
		}
	}
	// WAL lets readers run beside a writer. A file system that cannot
	// share its index (some network mounts) keeps the rollback journal:
	// slower to share, as correct.
	if err := s.enableWAL(); err != nil {
		return fmt.Errorf("history: %s: %w", s.path, err)
	}
	return nil
}

// enableWAL turns on WAL (kept in the file: once set, later opens find it
// on). Switching needs every other connection off the file, and SQLite
// answers SQLITE_BUSY at once, without its busy handler, while another
// process holds it open (two CI jobs opening a new history together):
// the switch is retried within the busy timeout.
func (s *Store) enableWAL() error {
	deadline := time.Now().Add(s.busy)
	for {
		_, err := s.db.Exec("PRAGMA journal_mode=WAL")
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// isBusy reports SQLite's SQLITE_BUSY (5; extended codes keep it in their
// low byte).
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5
}

// state is what a database says it is.
type state struct {
	version int // schema version; 0 for an empty database
}

// state reads the application id, the schema objects and the schema
// version, refusing a database that is not a history or is newer.
func (s *Store) state(q queryer) (state, error) {
	// One statement, so one snapshot: read apart, a history created by
	// another process between the two reads looked like a foreign
	// database (its tables, and the application id not yet read as set).
	var id int64
	var objects int
	if err := q.QueryRow("SELECT a.application_id, (SELECT count(*) FROM sqlite_schema) FROM pragma_application_id() AS a").Scan(&id, &objects); err != nil {
		return state{}, s.notHistory(err)
	}
	switch {
	case id == 0 && objects == 0:
		return state{}, nil // empty: to create
	case id != applicationID:
		return state{}, fmt.Errorf("history: %s: %w: a SQLite database of another application (application id %#x, %d schema objects); give a history made by tune history add, or a new file name", s.path, ErrNotHistory, id, objects)
	}
	var v string
	if err := q.QueryRow("SELECT value FROM meta WHERE name = 'schema_version'").Scan(&v); err != nil {
		return state{}, fmt.Errorf("history: %s: %w: no schema version in its meta table (%v): the file is damaged", s.path, ErrNotHistory, err)
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil || n < 1:
		return state{}, fmt.Errorf("history: %s: %w: schema version %q is not a positive integer: the file is damaged", s.path, ErrNotHistory, v)
	case n > currentVersion:
		return state{}, fmt.Errorf("history: %s: %w: schema version %d, this gccl knows up to %d: use a newer tune", s.path, ErrNewerSchema, n, currentVersion)
	}
	return state{version: n}, nil
}

// notHistory wraps SQLite's refusal of a file ("file is not a database",
// "database disk image is malformed").
func (s *Store) notHistory(err error) error {
	return fmt.Errorf("history: %s: %w: SQLite cannot read it (%v): the file is damaged or not a database", s.path, ErrNotHistory, err)
}
