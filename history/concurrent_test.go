package history

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// The child process of TestConcurrentAddsProcesses: this test binary run
// again with childDB set adds childRuns runs to that file and exits.
const (
	childDB   = "GCCL_HISTORY_TEST_DB"
	childTag  = "GCCL_HISTORY_TEST_TAG"
	childRuns = 20
	runSize   = 50 // records per run
)

func TestMain(m *testing.M) {
	if db := os.Getenv(childDB); db != "" {
		if err := addRuns(db, os.Getenv(childTag), nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// addRuns adds childRuns runs, one transaction each, through s, or
// through a store of its own opened on path when s is nil (made if
// missing: writers that race to create the file).
func addRuns(path, tag string, s *Store) error {
	if s == nil {
		var err error
		if s, err = Open(path, Options{Create: true}); err != nil {
			return err
		}
		defer s.Close()
	}
	for i := range childRuns {
		recs := synth(runSize, 4, 1+float64(i)/10)
		if _, added, err := s.Add(Run{Commit: fmt.Sprintf("%s-%d", tag, i)}, recs); err != nil || !added {
			return fmt.Errorf("%s run %d: added %v, %v", tag, i, added, err)
		}
	}
	return nil
}

// checkAll: every run of every writer is there, whole.
func checkAll(t *testing.T, path string, writers int) {
	t.Helper()
	if n := count(t, path, "runs"); n != writers*childRuns {
		t.Errorf("%d runs, want %d", n, writers*childRuns)
	}
	if n := count(t, path, "records"); n != writers*childRuns*runSize {
		t.Errorf("%d records, want %d", n, writers*childRuns*runSize)
	}
	s := mustOpen(t, path)
	runs, err := s.Runs(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Records != runSize {
			t.Errorf("run %s has %d records, want %d", r.Commit, r.Records, runSize)
		}
	}
}

// Goroutines adding at once, two through stores of their own and two
// through one store, all three stores racing to create the file, lose
// nothing.
func TestConcurrentAddsGoroutines(t *testing.T) {
	path := dbPath(t)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() { errs <- addRuns(path, fmt.Sprintf("own%d", g), nil) })
	}
	shared := mustOpen(t, path) // racing the two to create the file
	for g := range 2 {
		wg.Go(func() { errs <- addRuns(path, fmt.Sprintf("shared%d", g), shared) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	checkAll(t, path, 4)
}

// Processes adding at once (two CI jobs sharing a file), the first of
// them creating it, lose nothing.
func TestConcurrentAddsProcesses(t *testing.T) {
	path := dbPath(t)
	var cmds []*exec.Cmd
	for p := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childDB+"="+path, childTag+"="+fmt.Sprintf("proc%d", p))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	if err := addRuns(path, "parent", nil); err != nil {
		t.Error(err)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %v: %v", cmd.Env[len(cmd.Env)-1], err)
		}
	}
	checkAll(t, path, 3)
}
