package history

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseLine: any line is refused with an error or gives an entry in
// its stored form (normalising it again changes nothing, its hash is
// stable); never a panic.
func FuzzParseLine(f *testing.F) {
	var b bytes.Buffer
	s := mustOpen(f, dbPath(f))
	mustAdd(f, s, Run{Commit: "c1", Branch: "main"}, synth(3, 4, 1))
	if _, err := s.Export(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"format":1,"commit":"c","time":"2026-01-01T00:00:00Z","records":[{"collective":"x","algorithm":"auto","protocol":"auto","nhosts":1,"time_us":1e308,"samples":[-1,0,1e-300]}]}`))
	f.Add([]byte(`{"format":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := parseLine(line)
		if err != nil {
			return
		}
		h1, err := e.hash()
		if err != nil {
			t.Fatalf("an accepted line does not hash: %v", err)
		}
		again, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		e2, err := parseLine(again)
		if err != nil {
			t.Fatalf("an accepted line, written again, is refused: %v\n%s", err, again)
		}
		if h2, _ := e2.hash(); h2 != h1 {
			t.Fatalf("the hash changed on a second pass:\n%s", again)
		}
	})
}
