// Parsers of the flags' values: sizes, lists, operations, types, roots,
// --configs entries, channel counts, buffer sizes, --precision.

package perf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gccl/gccl/internal/size"
	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/reduce"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

func parseSizeFlag(name, v string) (int64, error) {
	n, err := size.Parse(v)
	if err != nil {
		return 0, usagef("invalid size specified for '%s': %q: want a number of bytes with an optional K, M or G suffix (e.g. 8, 1.5K, 64M)", name, v)
	}
	return n, nil
}

// parseSizeList is --sizes: comma-separated sizes, returned ascending
// without repeats.
func parseSizeList(v string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(v, ",") {
		n, err := size.Parse(strings.TrimSpace(f))
		if err != nil {
			return nil, usagef("invalid --sizes %q: %q is not a size; want sizes in bytes with an optional K, M or G suffix, comma-separated (e.g. 12,3K,1.5M)", v, strings.TrimSpace(f))
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

var opAliases = map[string]reduce.Op{"mulsum": reduce.PreMulSum, "premulsum": reduce.PreMulSum}

func parseOps(s string) ([]reduce.Op, error) {
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		return reduce.AllOps(), nil
	}
	var out []reduce.Op
	for _, f := range strings.Split(s, ",") {
		if o, ok := opAliases[strings.ToLower(strings.TrimSpace(f))]; ok {
			out = append(out, o)
			continue
		}
		o, err := reduce.ParseOp(f)
		if err != nil {
			return nil, usagef("invalid -o/--op %q: valid ops are sum, prod, max, min, avg, mulsum (premulsum) or all", f)
		}
		out = append(out, o)
	}
	return out, nil
}

func parseTypes(s string) ([]reduce.DataType, error) {
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		return reduce.AllDataTypes(), nil
	}
	var out []reduce.DataType
	for _, f := range strings.Split(s, ",") {
		t, err := reduce.ParseDataType(f)
		if err != nil {
			return nil, usagef("invalid -d/--datatype %q: valid types are int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16 or all", f)
		}
		out = append(out, t)
	}
	return out, nil
}

// roots resolves -r against the rank count: a rank, or -1/all for every rank.
func (o *Options) roots(n int) ([]int, error) {
	s := strings.TrimSpace(o.rootSpec)
	if strings.EqualFold(s, "all") || s == "-1" {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	r, err := strconv.Atoi(s)
	if err != nil || r < 0 || r >= n {
		return nil, usagef("invalid -r/--root %q: want a rank from 0 to %d, or -1/all to sweep every root", o.rootSpec, n-1)
	}
	return []int{r}, nil
}

// parseList reads a comma list of names (case-insensitive, each read by
// parse) or "all" (every value of all).
func parseList[T fmt.Stringer](flag, s string, all []T, parse func(string) (T, error)) ([]T, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		return append([]T(nil), all...), nil
	}
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(f)
		if err != nil {
			names := make([]string, len(all))
			for i, x := range all {
				names[i] = x.String()
			}
			return nil, usagef("invalid --%s %q: valid values are %s or all", flag, f, strings.Join(names, ", "))
		}
		out = append(out, v)
	}
	return out, nil
}

// parseConfigList reads --configs: comma-separated ALGO/PROTO/CHANNELS
// triples, each part a name or auto; "auto" alone is all auto
// (tuning.ParseRequest).
func parseConfigList(s string) ([]RunConfig, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []RunConfig
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		r, err := tuning.ParseRequest(f, ccl.MaxChannels)
		if err != nil {
			return nil, usagef("invalid --configs entry %q: %v (want ALGO/PROTO/CHANNELS, each part a value or auto, e.g. Ring/LL128/2 or Tree/auto/auto; or auto)", f, err)
		}
		out = append(out, RunConfig{Algo: r.Algo, Proto: r.Proto, NChannels: r.NChannels})
	}
	return out, nil
}

func parseChannels(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > ccl.MaxChannels {
			return nil, usagef("invalid --nchannels %q: want channel counts from 1 to %d, e.g. 1,2,4", f, ccl.MaxChannels)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseBuffSizes(s string) ([]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int64
	for _, f := range strings.Split(s, ",") {
		n, err := size.Parse(f)
		if err != nil || n <= 0 {
			return nil, usagef("invalid --buffsize %q: want sizes such as 1M,4M", f)
		}
		if err := proto.ValidateBuffSize(proto.Simple, int(n)); err != nil {
			return nil, usagef("invalid --buffsize %q: %v", f, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// parsePrecision reads --precision: a fraction (0.02) or a percentage (2%),
// above 0 and below 1; "" is off.
func parsePrecision(s string) (float64, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	f, err := results.ParseFraction(s)
	if err != nil || !(f > 0 && f < 1) {
		return 0, usagef("invalid --precision %q: want a fraction between 0 and 1 (0.02) or a percentage (2%%)", s)
	}
	return f, nil
}
