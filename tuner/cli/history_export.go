package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/gccl/gccl/results"
)

// historyExportCmd is `tune history export --db FILE [--output F]`: every
// run as JSON Lines, to a file or standard output.
func historyExportCmd(args []string, stdout, stderr io.Writer) int {
	const name = "tune history export"
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	db := dbFlag(fs)
	out := outputFlag(fs, "the JSON Lines file to write (default: standard output)")
	force := fs.Bool("force", false, "replace the --output file if it exists")
	setUsage(fs, stderr, "tune history export --db FILE [--output F] [--force]",
		"Writes every run of the history, oldest first, as JSON Lines: one run a line with\nits records. tune history import reads them back (into another history, or to\nmerge histories).")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q: the history is --db FILE, the output --output F\n", name, fs.Arg(0))
		return exitBad
	}
	s := openHistory(name, *db, false, stderr)
	if s == nil {
		return exitBad
	}
	if *out == "" {
		if _, err := s.Export(stdout); err != nil {
			s.Close()
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return exitBad
		}
		return closeHistory(name, s, exitOK, stderr)
	}
	create := results.Create
	if *force {
		create = results.CreateForce
	}
	f, err := create(*out)
	n := 0
	if err == nil {
		n, err = s.Export(f)
		err = settle(f, err)
	}
	if err != nil {
		s.Close()
		fmt.Fprintf(stderr, "%s: writing %s: %v\n", name, *out, err)
		return exitBad
	}
	fmt.Fprintf(stdout, "wrote %s: %s\n", *out, nRuns(n))
	return closeHistory(name, s, exitOK, stderr)
}
