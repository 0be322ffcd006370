package history

import (
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/gccl/gccl/ci"
)

// insertV1 stores an entry as schema version 1 did: no hash.
func insertV1(t *testing.T, db *sql.DB, e entry) {
	t.Helper()
	meta, _ := json.Marshal(e.Meta)
	res, err := db.Exec(`INSERT INTO runs (commit_sha, branch, time_ns, machine, tool, meta) VALUES (?, ?, ?, ?, ?, ?)`,
		e.Commit, e.Branch, e.Time.UnixNano(), e.Machine, e.Tool, string(meta))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.LastInsertId()
	for i, r := range e.Records {
		k := r.Key
		if _, err := db.Exec(`INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, i, k.Collective, k.Type, k.Op, k.Algorithm, k.Protocol, k.Channels, k.BuffSize, k.NRanks, k.NHosts,
			k.Size, k.Placement, r.TimeUs, r.MedianUs, r.BusBw, r.RefCopy, encodeSamples(r.Samples)); err != nil {
			t.Fatal(err)
		}
	}
}

// storeAt makes a store at path of schema version v, as an older gccl
// wrote it, and returns it with its open database.
func storeAt(t *testing.T, path string, v int) (*Store, *sql.DB) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, time.Minute, true))
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{db: db, path: path}
	if err := s.migrateTo(v); err != nil {
		t.Fatal(err)
	}
	return s, db
}

// A version-1 file (no run hashes, so a run stored twice) opens as the
// current version: every run gets the hash a fresh Add computes (adding
// one again finds it), the duplicate is kept once, the series are intact.
func TestMigrateFromVersion1(t *testing.T) {
	path := dbPath(t)
	v1, db := storeAt(t, path, 1)
	first, err := entryOf(Run{Commit: "c1", Branch: "main"}, synth(40, 5, 1))
	if err != nil {
		t.Fatal(err)
	}
	second, err := entryOf(Run{Commit: "c2", Time: t0.Add(time.Hour)}, synth(40, 5, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []entry{first, second, first} {
		insertV1(t, db, e)
	}
	if st, err := v1.state(db); err != nil || st.version != 1 {
		t.Fatalf("made version %d (%v), want 1", st.version, err)
	}
	db.Close()

	s := mustOpen(t, path)
	if st, err := s.state(s.db); err != nil || st.version != currentVersion {
		t.Fatalf("after Open: version %d (%v), want %d", st.version, err, currentVersion)
	}
	runs, err := s.Runs(Filter{})
	if err != nil || len(runs) != 2 || runs[0].Commit != "c1" || runs[1].Commit != "c2" || runs[0].Records != 40 {
		t.Fatalf("runs %+v (%v), want c1 (40 records) and c2, the duplicate kept once", runs, err)
	}
	if id, added, err := s.Add(Run{Commit: "c1", Branch: "main"}, synth(40, 5, 1)); err != nil || added || id != runs[0].ID {
		t.Errorf("adding the migrated run again: id %d added %v (%v), want %d found", id, added, err, runs[0].ID)
	}
	if n := count(t, path, "records"); n != 80 {
		t.Errorf("%d records, want 80", n)
	}
	pts, err := s.Series(ci.KeyOf(synth(1, 0, 1)[0]), ci.Time, ci.NormNone, Filter{})
	if err != nil || len(pts) != 2 || pts[1].Value != 2*pts[0].Value {
		t.Errorf("series after migration: %+v (%v)", pts, err)
	}
}

// A version-2 file (records without min_us) opens as the current version:
// its runs keep their hashes (adding one again finds it, min_us and all),
// their points have no fastest value, and a run added after the upgrade
// has one.
func TestMigrateFromVersion2(t *testing.T) {
	path := dbPath(t)
	_, db := storeAt(t, path, 2)
	old := synth(10, 5, 1)
	e, err := entryOf(Run{Commit: "c1"}, old)
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.hash()
	if err != nil {
		t.Fatal(err)
	}
	insertV1(t, db, e)
	if _, err := db.Exec(`UPDATE runs SET hash = ?`, h); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := mustOpen(t, path)
	if st, err := s.state(s.db); err != nil || st.version != currentVersion {
		t.Fatalf("after Open: version %d (%v), want %d", st.version, err, currentVersion)
	}
	runs, err := s.Runs(Filter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %+v (%v), want the one stored", runs, err)
	}
	withMin := synth(10, 5, 1)
	for i := range withMin {
		withMin[i].MinUs = withMin[i].MedianUs / 2
	}
	if id, added, err := s.Add(Run{Commit: "c1"}, withMin); err != nil || added || id != runs[0].ID {
		t.Errorf("adding the stored run again with min_us: id %d added %v (%v), want %d found", id, added, err, runs[0].ID)
	}
	newer := synth(10, 5, 2)
	for i := range newer {
		newer[i].MinUs = newer[i].MedianUs / 2
	}
	mustAdd(t, s, Run{Commit: "c2", Time: t0.Add(time.Hour)}, newer)
	k := ci.KeyOf(newer[0])
	pts, err := s.Series(k, ci.Time, ci.NormNone, Filter{})
	if err != nil || len(pts) != 2 {
		t.Fatalf("series %+v (%v), want 2 points", pts, err)
	}
	if pts[0].Fastest != 0 || pts[1].Fastest != newer[0].MinUs {
		t.Errorf("fastest %v and %v, want 0 (stored before min_us) and %v", pts[0].Fastest, pts[1].Fastest, newer[0].MinUs)
	}
}
