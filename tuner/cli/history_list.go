package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/pflag"

	"github.com/gccl/gccl/history"
)

// historyListCmd is `tune history list --db FILE`: the runs, oldest first.
func historyListCmd(args []string, stdout, stderr io.Writer) int {
	const name = "tune history list"
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	branch := fs.String("branch", "", "list only the runs of this branch (default: every branch)")
	machine := fs.String("machine", "", "list only the runs of this machine (default: every machine)")
	setUsage(fs, stderr, "tune history list --db FILE [--branch B] [--machine M]",
		"Lists the history's runs, oldest first: commit, branch, time, machine, tool, records.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q: the history is --db FILE\n", name, fs.Arg(0))
		return exitBad
	}
	s := openHistory(name, *db, false, stderr)
	if s == nil {
		return exitBad
	}
	runs, err := s.Runs(history.Filter{Branch: *branch, Machine: *machine})
	if err != nil {
		s.Close()
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitBad
	}
	if len(runs) == 0 {
		fmt.Fprintf(stdout, "%s: no runs\n", *db)
		return closeHistory(name, s, exitOK, stderr)
	}
	t := table.NewWriter()
	t.SetOutputMirror(stdout)
	t.SetStyle(table.StyleLight)
	t.AppendHeader(table.Row{"run", "commit", "branch", "time", "machine", "tool", "records"})
	for _, r := range runs {
		t.AppendRow(table.Row{r.ID, shortCommit(r.Commit), r.Branch, r.Time.Format(time.RFC3339), r.Machine, r.Tool, r.Records})
	}
	t.Render()
	fmt.Fprintln(stdout, nRuns(len(runs)))
	return closeHistory(name, s, exitOK, stderr)
}

// shortCommit is a SHA's first 12 hex digits, as git abbreviates for a
// large repository; anything else whole.
func shortCommit(c string) string {
	if len(c) == 40 || len(c) == 64 {
		return c[:12]
	}
	return c
}
