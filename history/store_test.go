package history

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A new history: the header says gccl, the meta table the schema version,
// the journal is WAL; opening it again reads the same; without Create a
// missing file is refused and not made.
func TestCreate(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path)
	var mode string
	if err := s.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q (%v), want wal", mode, err)
	}
	if runs, err := s.Runs(Filter{}); err != nil || len(runs) != 0 {
		t.Errorf("a new history has runs %v (%v)", runs, err)
	}
	s.Close()

	head := readFile(t, path)[:100]
	if id := binary.BigEndian.Uint32(head[68:72]); id != applicationID {
		t.Errorf("application id %#x, want %#x", id, applicationID)
	}
	s = mustOpen(t, path)
	st, err := s.state(s.db)
	if err != nil || st.version != currentVersion || currentVersion != 3 {
		t.Errorf("reopened: version %d (%v), want %d", st.version, err, currentVersion)
	}
	var app string
	if err := s.db.QueryRow("SELECT value FROM meta WHERE name = 'application'").Scan(&app); err != nil || app != "gccl history" {
		t.Errorf("meta application %q (%v)", app, err)
	}

	missing := filepath.Join(t.TempDir(), "none.db")
	if _, err := Open(missing, Options{}); !errors.Is(err, ErrNoHistory) || !strings.Contains(err.Error(), "tune history add makes one") {
		t.Errorf("missing file without Create: %v, want ErrNoHistory", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open without Create made %s", missing)
	}
	if _, err := Open("", Options{Create: true}); err == nil {
		t.Error("an empty path was accepted")
	}
}

// Files that are not a gccl history are refused with an error that says
// what they are, and are left byte for byte as they were.
func TestRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	noise := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.IntN(256))
	}
	sqliteFile := func(name string, setup ...string) string {
		p := filepath.Join(dir, name)
		db, err := sql.Open("sqlite", dsn(p, time.Second, true))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range setup {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		return p
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newer := dbPath(t)
	s := mustOpen(t, newer)
	if _, err := s.db.Exec("UPDATE meta SET value = '99' WHERE name = 'schema_version'"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ours := dbPath(t)
	o := mustOpen(t, ours)
	mustAdd(t, o, Run{Commit: "c1"}, synth(50, 0, 1))
	o.Close() // checkpoints the WAL into the file
	cut := write("cut.db", readFile(t, ours)[:60])
	damaged := readFile(t, ours)
	for i := 100; i < len(damaged); i++ {
		damaged[i] ^= 0x5a // every page past the header
	}

	for _, c := range []struct {
		name, path string
		want       error
		says       string
	}{
		{"text", write("notes.txt", []byte("results: allreduce 8B 2.5us\n")), ErrNotHistory, "not a SQLite file"},
		{"noise", write("noise.bin", noise), ErrNotHistory, "not a SQLite file"},
		{"a results file", write("r.jsonl", readFile(t, gateRuns)), ErrNotHistory, "not a SQLite file"},
		{"another program's SQLite", sqliteFile("app.db", "CREATE TABLE users (name TEXT)", "INSERT INTO users VALUES ('x')"), ErrNotHistory, "another application"},
		{"another application id", sqliteFile("other.db", "PRAGMA application_id = 42", "CREATE TABLE t (x)"), ErrNotHistory, "application id 0x2a"},
		{"a header cut short", cut, ErrNotHistory, "cut short"},
		{"damaged pages", write("damaged.db", damaged), ErrNotHistory, "damaged"},
		{"a newer schema", newer, ErrNewerSchema, "schema version 99"},
	} {
		before := readFile(t, c.path)
		s, err := Open(c.path, Options{Create: true})
		if err == nil {
			s.Close()
			t.Errorf("%s: opened", c.name)
		} else if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("%s: %v; want %v saying %q and naming the file", c.name, err, c.want, c.says)
		}
		if after := readFile(t, c.path); !bytes.Equal(before, after) {
			t.Errorf("%s: the file changed (%d bytes, was %d)", c.name, len(after), len(before))
		}
	}
	if _, err := Open(dir, Options{Create: true}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
}
