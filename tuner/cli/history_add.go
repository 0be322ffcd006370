package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/ci"
	"github.com/gccl/gccl/history"
)

// historyAddCmd is `tune history add --db FILE --commit SHA FILES...`:
// the result files as one run of the commit, in one transaction.
func historyAddCmd(args []string, stdout, stderr io.Writer) int {
	const name = "tune history add"
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	commit := fs.String("commit", "", "the commit the results measured (a SHA); required")
	branch := fs.String("branch", "", "the commit's branch (default: none)")
	at := fs.String("time", "", "when the run ran, RFC 3339, e.g. 2026-03-01T12:00:00Z (default: the records' earliest timestamp, else now)")
	machine := fs.String("machine", "", "the machine that measured (default: the records' host, else this host's name)")
	tags := tagFlag(fs)
	setUsage(fs, stderr, "tune history add --db FILE --commit SHA [--branch B] [--time RFC3339] [--machine M] FILES...",
		"Adds result files (perf --out JSONL or CSV, nccl-tests text or -J JSON, go test -bench\noutput) to the history as one run of the commit; makes the file if missing.\nThe same run added twice is kept once.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, name+": "+format+"\n", a...)
		return exitBad
	}
	if *db == "" {
		return bad("--db FILE is required: the history database (made if missing)")
	}
	if strings.TrimSpace(*commit) == "" {
		return bad("--commit SHA is required: the commit the results measured")
	}
	if fs.NArg() == 0 {
		return bad("no result files (give the files of the run)")
	}
	run := history.Run{Commit: *commit, Branch: *branch, Machine: *machine}
	if *at != "" {
		t, err := time.Parse(time.RFC3339, *at)
		if err != nil {
			return bad("--time %q: want RFC 3339, e.g. 2026-03-01T12:00:00Z or 2026-03-01T13:00:00+01:00", *at)
		}
		run.Time = t
	}
	recs, err := readRecords(fs.Args(), *tags)
	if err != nil {
		return bad("%v", err)
	}
	keys := map[ci.Key]bool{}
	stamped, hosts := false, map[string]bool{}
	for i, r := range recs {
		if r.Wrong > 0 {
			return bad("%s: record %s reports %d wrong elements: a history holds correct runs", where(r, i), ci.KeyOf(r), r.Wrong)
		}
		keys[ci.KeyOf(r)] = true
		stamped = stamped || !r.Timestamp.IsZero()
		if r.Host != "" {
			hosts[r.Host] = true
		}
	}
	if run.Time.IsZero() && !stamped {
		run.Time = time.Now()
	}
	if run.Machine == "" && len(hosts) != 1 {
		if run.Machine, err = os.Hostname(); err != nil {
			return bad("the records name %d hosts and this host has no name (%v): give --machine", len(hosts), err)
		}
	}
	s := openHistory(name, *db, true, stderr)
	if s == nil {
		return exitBad
	}
	id, added, err := s.Add(run, recs)
	if err != nil {
		s.Close()
		return bad("%v", err)
	}
	if !added {
		fmt.Fprintf(stdout, "%s already holds this run (run %d): nothing added\n", *db, id)
		return closeHistory(name, s, exitOK, stderr)
	}
	runs, err := s.Runs(history.Filter{Commit: run.Commit})
	if err != nil {
		s.Close()
		return bad("%v", err)
	}
	for _, r := range runs {
		if r.ID == id {
			fmt.Fprintf(stdout, "added run %d to %s: commit %s, %s, machine %s, %d records, %d keys\n",
				id, *db, r.Commit, r.Time.Format(time.RFC3339), orNone(r.Machine), r.Records, len(keys))
		}
	}
	return closeHistory(name, s, exitOK, stderr)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
