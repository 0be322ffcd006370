package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
)

// historyImportCmd is `tune history import --db FILE F...`: the runs of
// exported files, each file in one transaction, runs already there
// skipped.
func historyImportCmd(args []string, stdout, stderr io.Writer) int {
	const name = "tune history import"
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	setUsage(fs, stderr, "tune history import --db FILE EXPORTS...",
		"Adds the runs of files written by tune history export to the history (made if\nmissing). Runs it already holds are skipped. Each file is added whole or, on an\nerror, not at all.")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *db == "" {
		fmt.Fprintf(stderr, "%s: --db FILE is required: the history to add to (made if missing)\n", name)
		return exitBad
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "%s: no files to import (give files written by tune history export)\n", name)
		return exitBad
	}
	s := openHistory(name, *db, true, stderr)
	if s == nil {
		return exitBad
	}
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			s.Close()
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return exitBad
		}
		st, err := s.Import(f, path)
		f.Close()
		if err != nil {
			s.Close()
			fmt.Fprintf(stderr, "%s: %v (nothing of %s added)\n", name, err, path)
			return exitBad
		}
		fmt.Fprintf(stdout, "%s: %s added, %d already in %s\n", path, nRuns(st.Added), st.Duplicates, *db)
	}
	return closeHistory(name, s, exitOK, stderr)
}
