package profplugin

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gccl/gccl/lib/tef"
)

// RankDir is the directory of a run's per-rank files when its merged
// trace is trace.
func RankDir(trace string) string { return trace + ".nccl" }

// rankPattern is the plugin's output pattern in RankDir: one file per
// rank, process and communicator.
const rankPattern = "r%r-%h-%p-c%n.json"

// EnvFromLookup returns the variables (KEY=VALUE) that make NCCL load
// gccl's profiler plugin (the path build returns) and write its per-rank
// files into RankDir(trace), which it creates. A NCCL_PROFILER_PLUGIN set
// to another plugin is an error: NCCL loads one profiler, and it would not
// write gccl's files. The event mask and buffer size are the user's
// (GCCL_PROFILER_MASK, GCCL_PROFILER_EVENTS), checked here so that a bad
// one stops the run before NCCL starts rather than silently tracing
// nothing.
func EnvFromLookup(lookup func(string) (string, bool), trace string, build func() (string, error)) ([]string, error) {
	if strings.TrimSpace(trace) == "" {
		return nil, errors.New("an NCCL trace needs a file name")
	}
	if err := checkKnobs(lookup); err != nil {
		return nil, err
	}
	so, err := build()
	if err != nil {
		return nil, fmt.Errorf("tracing NCCL needs gccl's profiler plugin: %w", err)
	}
	if p, ok := lookup(EnvPlugin); ok && strings.TrimSpace(p) != "" && !samePath(p, so) {
		return nil, fmt.Errorf("%s=%s: tracing NCCL loads gccl's profiler plugin (%s), and NCCL loads one profiler: unset %s", EnvPlugin, p, so, EnvPlugin)
	}
	dir := RankDir(trace)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("the NCCL trace's per-rank directory: %w", err)
	}
	return []string{EnvPlugin + "=" + so, EnvOutput + "=" + filepath.Join(dir, rankPattern)}, nil
}

func samePath(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == b {
		return true
	}
	sa, ea := os.Stat(a)
	sb, eb := os.Stat(b)
	return ea == nil && eb == nil && os.SameFile(sa, sb)
}

// maskNames are the names GCCL_PROFILER_MASK takes (csrc's maskNames).
var maskNames = []string{"group", "coll", "p2p", "proxyop", "proxystep", "kernelch", "all"}

// checkKnobs checks GCCL_PROFILER_MASK and GCCL_PROFILER_EVENTS as the
// plugin will.
func checkKnobs(lookup func(string) (string, bool)) error {
	if v, ok := lookup(EnvEvents); ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 1<<26 {
			return fmt.Errorf("%s=%s: want a whole number of events from 1 to %d", EnvEvents, v, 1<<26)
		}
	}
	v, ok := lookup(EnvMask)
	if !ok || v == "" {
		return nil
	}
	if n, err := strconv.ParseInt(v, 0, 64); err == nil {
		const supported = 0x1 | 0x2 | 0x4 | 0x8 | 0x10 | 0x40
		if n <= 0 || n&^supported != 0 {
			return fmt.Errorf("%s=%s: a number must be a non-empty set of the bits %#x (group 0x1, coll 0x2, p2p 0x4, proxyop 0x8, proxystep 0x10, kernelch 0x40)", EnvMask, v, supported)
		}
		return nil
	}
	for _, name := range strings.Split(v, ",") {
		known := false
		for _, m := range maskNames {
			known = known || strings.EqualFold(name, m)
		}
		if !known {
			return fmt.Errorf("%s=%s: unknown event %q: valid are %s (joined by commas), or a number", EnvMask, v, name, strings.Join(maskNames, ", "))
		}
	}
	return nil
}

// ClearRanks removes the per-rank files an earlier run left in
// RankDir(trace): the caller that owns a run calls it once, before any of
// the run's processes starts NCCL.
func ClearRanks(trace string) error {
	files, err := filepath.Glob(filepath.Join(RankDir(trace), "r*.json"))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Summary is what a merge read.
type Summary struct {
	Files, Ranks, Events int
	Dropped              int64    // events the plugin had no room for
	Problems             []string // what the plugin's files say it left out
}

// MergeRanks merges the per-rank files of RankDir(trace) into trace (see
// Merge); the per-rank files stay.
func MergeRanks(trace string) (Summary, error) {
	paths, err := filepath.Glob(filepath.Join(RankDir(trace), "r*.json"))
	if err != nil {
		return Summary{}, err
	}
	if len(paths) == 0 {
		return Summary{}, fmt.Errorf("no NCCL trace files in %s: did NCCL load the profiler plugin (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT says) and destroy its communicators?", RankDir(trace))
	}
	sort.Strings(paths)
	files := make([]*tef.File, len(paths))
	for i, p := range paths {
		if files[i], err = tef.ReadFile(p); err != nil {
			return Summary{}, err
		}
	}
	out, sum, err := Merge(files)
	if err != nil {
		return sum, err
	}
	if errs := tef.Validate(out); errs != nil {
		return sum, fmt.Errorf("the merged NCCL trace breaks the format's rules: %w", errors.Join(errs...))
	}
	return sum, tef.WriteFile(trace, out)
}

// CommTracks is the tid offset of a rank's k-th communicator whose time
// overlaps an earlier one's (tid + k*CommTracks): their lanes were laid out
// apart.
const CommTracks = 1000000

// Merge joins the plugin's per-rank files into one trace. Each file's
// timestamps are moved onto the earliest file's base (otherData.ts_base_ns:
// the plugin counts from the start of an hour of CLOCK_REALTIME). Files of
// one rank (a process that creates communicators one after another) become
// one process; one that overlaps an earlier one in time keeps its tracks
// apart (CommTracks).
func Merge(files []*tef.File) (*tef.File, Summary, error) {
	sum := Summary{Files: len(files)}
	type part struct {
		f          *tef.File
		start, end float64
	}
	bases := make([]int64, len(files))
	base, based := int64(math.MaxInt64), false
	for i, f := range files {
		b, ok, err := baseOf(f)
		if err != nil {
			return nil, sum, fmt.Errorf("trace %d: %w", i+1, err)
		}
		if ok {
			bases[i], base, based = b, min(base, b), true
		}
	}
	for i, f := range files {
		if _, ok := f.OtherData["ts_base_ns"]; !ok {
			bases[i] = base // a file without a base stays as it is
		}
	}
	byRank := map[int][]part{}
	for i, f := range files {
		shift := tef.Micros(bases[i] - base)
		pid, start, end := -1, math.Inf(1), math.Inf(-1)
		for j := range f.TraceEvents {
			e := &f.TraceEvents[j]
			if pid >= 0 && e.Pid != pid {
				return nil, sum, fmt.Errorf("trace %d has ranks %d and %d: the plugin writes one rank a file", i+1, pid, e.Pid)
			}
			pid = e.Pid
			if e.Ph == "M" {
				continue
			}
			e.Ts += shift
			start, end = math.Min(start, e.Ts), math.Max(end, e.End())
			sum.Events++
		}
		if pid < 0 {
			continue
		}
		sum.Dropped += countOf(f, "dropped")
		for _, k := range lost {
			if n := countOf(f, k.key); n > 0 {
				what := "events"
				if n == 1 {
					what = "event"
				}
				sum.Problems = append(sum.Problems, fmt.Sprintf("rank %d: %d %s %s", pid, n, what, k.why))
			}
		}
		byRank[pid] = append(byRank[pid], part{f, start, end})
	}
	ranks := make([]int, 0, len(byRank))
	for r := range byRank {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	sum.Ranks = len(ranks)
	joined := make([]*tef.File, 0, len(ranks))
	for _, r := range ranks {
		parts := byRank[r]
		if len(parts) == 1 {
			joined = append(joined, parts[0].f)
			continue
		}
		sort.SliceStable(parts, func(a, b int) bool { return parts[a].start < parts[b].start })
		one := &tef.File{}
		var others []any
		end := math.Inf(-1)
		for k, p := range parts {
			off := 0
			if p.start < end {
				off = k * CommTracks
			} else {
				end = math.Max(end, p.end)
			}
			for _, e := range p.f.TraceEvents {
				e.Tid += off
				one.TraceEvents = append(one.TraceEvents, e)
			}
			others = append(others, p.f.OtherData)
		}
		tef.SortForTracks(one.TraceEvents)
		one.OtherData = map[string]any{"communicators": others}
		joined = append(joined, one)
	}
	out, err := tef.Merge(joined)
	if err != nil {
		return nil, sum, err
	}
	if out.OtherData == nil {
		out.OtherData = map[string]any{}
	}
	if based {
		out.OtherData["ts_base_ns"] = strconv.FormatInt(base, 10)
		out.OtherData["clock"] = "CLOCK_REALTIME"
	}
	return out, sum, nil
}

// lost are the plugin's counts of events it left out, and why.
var lost = []struct{ key, why string }{
	{"dropped", "dropped: the buffer was full (raise " + EnvEvents + ")"},
	{"unfinished", "never stopped by NCCL"},
	{"orphans", "steps without their proxy operation"},
	{"no_lane", "left out: no free lane"},
}

// baseOf reads the plugin's otherData.ts_base_ns (ok false for a file
// without one).
func baseOf(f *tef.File) (base int64, ok bool, err error) {
	v, ok := f.OtherData["ts_base_ns"]
	if !ok {
		return 0, false, nil
	}
	s, _ := v.(string)
	b, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("otherData.ts_base_ns %v: want nanoseconds as a decimal string", v)
	}
	return b, true, nil
}

func countOf(f *tef.File, key string) int64 {
	if n, ok := f.OtherData[key].(float64); ok {
		return int64(n)
	}
	return 0
}
