package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// Conventions of every subcommand's flags, which cli_help_test checks: one
// line of usage each, saying the unit and, where pflag does not print it
// (an empty or zero default), the default; no backquotes (pflag would take
// the quoted word for the value's name). -o is the perf binaries' reduction
// operator (nccl-tests' meaning), so no tune flag has it: files to write
// are --output.

// outputFlag defines --output, the file a subcommand writes. The old
// spelling --out still works, hidden, with a deprecation note.
func outputFlag(fs *pflag.FlagSet, usage string) *string {
	p := fs.String("output", "", usage)
	fs.StringVar(p, "out", "", usage)
	_ = fs.MarkDeprecated("out", "use --output") // the flag exists: no error
	return p
}

// setUsage gives fs a help text: the synopsis, a line or two on what the
// subcommand does, then the flags.
func setUsage(fs *pflag.FlagSet, stderr io.Writer, synopsis, about string) {
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\n%s\n\nflags:\n", synopsis, about)
		fs.PrintDefaults()
	}
}

// parseFlags parses a subcommand's flags; ok is false when the command
// should exit with code: 0 after --help, 2 after a bad flag (named on
// stderr: pflag's ContinueOnError does not print it).
func parseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, pflag.ErrHelp):
		return exitOK, false
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) && ne.GetSpecifiedShortnames() != "" && ne.GetSpecifiedName() == "o" {
		where := "write files with --output FILE"
		if fs.Lookup("output") == nil {
			where = fs.Name() + " writes no output file (see --help)"
		}
		fmt.Fprintf(stderr, "%s: -o is not a tune flag: %s (-o is the reduction operator of the perf binaries)\n", fs.Name(), where)
		return exitBad, false
	}
	fmt.Fprintf(stderr, "%s: %v (see --help)\n", fs.Name(), err)
	return exitBad, false
}

// tagFlag defines --tag, shared by every subcommand that reads results.
func tagFlag(fs *pflag.FlagSet) *[]string {
	return fs.StringArray("tag", nil, "configuration of every input file, k=v[,k=v] with keys proto, algo, channels, buffsize, hosts; FILE@k=v tags one file; repeatable (default: none)")
}
