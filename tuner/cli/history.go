// tune history: the results store (package history), one SQLite file of
// every run of the perf gate, per commit.

package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/history"
)

// historyUsage lists history's subcommands.
const historyUsage = `usage: tune history <command> --db FILE [flags]

Keeps every run of the perf gate, per commit, in one SQLite file (--db), so
that each key's results can be read as a series over the commits.

commands:
  add      add result files as one run of a commit
  list     list the runs: commit, branch, time, machine, records
  export   write the history as JSON Lines, one run a line
  import   add the runs of files written by export (runs already there are skipped)
  changes  the change points of every key's series; --fail-on-change gates CI on them

Run "tune history <command> --help" for its flags.
`

// historyCmd dispatches `tune history <command>`. Commands that read a
// history's series (change points, the report) open it with openHistory.
func historyCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "tune history: no command\n\n%s", historyUsage)
		return exitBad
	}
	switch args[0] {
	case "add":
		return historyAddCmd(args[1:], stdout, stderr)
	case "list":
		return historyListCmd(args[1:], stdout, stderr)
	case "export":
		return historyExportCmd(args[1:], stdout, stderr)
	case "import":
		return historyImportCmd(args[1:], stdout, stderr)
	case "changes":
		return historyChangesCmd(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, historyUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "tune history: unknown command %q\n\n%s", args[0], historyUsage)
	return exitBad
}

// dbFlag defines --db, the history file every history command (and tune
// report) takes.
func dbFlag(fs *pflag.FlagSet) *string {
	return fs.String("db", "", "the history database file (SQLite) that tune history add makes; required")
}

// openHistory opens the --db file of command cmd: made when missing if
// create (the commands that add), else it must exist. On failure it says
// why on stderr and returns nil.
func openHistory(cmd, db string, create bool, stderr io.Writer) *history.Store {
	if db == "" {
		fmt.Fprintf(stderr, "%s: --db FILE is required: the history database\n", cmd)
		return nil
	}
	s, err := history.Open(db, history.Options{Create: create})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return nil
	}
	return s
}

// closeHistory closes a store, reporting a failure (the WAL not folded
// back into the file) as a failed command.
func closeHistory(cmd string, s *history.Store, code int, stderr io.Writer) int {
	if err := s.Close(); err != nil {
		fmt.Fprintf(stderr, "%s: closing %s: %v\n", cmd, s.Path(), err)
		return exitBad
	}
	return code
}

// nRuns is "1 run" or "N runs".
func nRuns(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}
