package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gccl/gccl/internal/size"
	"github.com/gccl/gccl/lib/tuning"
	"github.com/gccl/gccl/results"
)

// tagKeys are the configuration fields a tag may set on records.
var tagKeys = []string{"proto", "algo", "channels", "buffsize", "hosts"}

// readRecords reads every FILE argument, detecting the format by content
// (our JSONL and CSV, nccl-tests text logs and -J JSON). A file may carry
// tags, FILE@proto=LL,algo=Ring: the configuration of a log that does not
// record it (nccl-tests text output; a -J file's environment does). tags
// (--tag k=v, repeatable, comma lists allowed) apply to every file, a
// file's own tags on top. A tag that contradicts what a record says is an
// error: a run with NCCL_PROTO=Simple tagged proto=LL is mixed-up input.
// A record with no configuration and no tag is "auto": the stack's default.
func readRecords(args []string, tags []string) ([]results.Record, error) {
	common, err := parseTags(strings.Join(tags, ","), "--tag")
	if err != nil {
		return nil, err
	}
	var all []results.Record
	for _, arg := range args {
		file, own := splitTags(arg)
		fileTags, err := parseTags(own, arg)
		if err != nil {
			return nil, err
		}
		t := merge(common, fileTags)
		recs, err := results.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			return nil, fmt.Errorf("%s: no result records in it", file)
		}
		for i := range recs {
			if err := applyTags(&recs[i], t); err != nil {
				where := recs[i].Source
				if where == "" {
					where = file
				}
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		}
		all = append(all, recs...)
	}
	return all, nil
}

// splitTags cuts "file@k=v,k=v" into the file and its tags; an @ not
// followed by k=v pairs is part of the file name.
func splitTags(arg string) (file, tags string) {
	i := strings.LastIndex(arg, "@")
	if i < 0 || !strings.Contains(arg[i+1:], "=") {
		return arg, ""
	}
	return arg[:i], arg[i+1:]
}

// parseTags reads "k=v,k=v", checking keys and values.
func parseTags(s, where string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, fmt.Errorf("%s: tag %q: want key=value (keys: %s)", where, kv, strings.Join(tagKeys, ", "))
		}
		switch k {
		case "proto":
			if !oneOf(v, "LL", "LL128", "Simple", "auto") {
				return nil, fmt.Errorf("%s: tag proto=%s: valid values are LL, LL128, Simple, auto", where, v)
			}
		case "algo":
			if !oneOf(v, append(tuning.AlgoNames(), "auto")...) {
				return nil, fmt.Errorf("%s: tag algo=%s: valid values are %s, auto", where, v, strings.Join(tuning.AlgoNames(), ", "))
			}
		case "channels", "hosts":
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				return nil, fmt.Errorf("%s: tag %s=%s: want a positive integer", where, k, v)
			}
		case "buffsize":
			if _, err := size.Parse(v); err != nil {
				return nil, fmt.Errorf("%s: tag buffsize=%s: %v", where, v, err)
			}
		default:
			return nil, fmt.Errorf("%s: unknown tag %q (valid: %s)", where, k, strings.Join(tagKeys, ", "))
		}
		out[k] = v
	}
	return out, nil
}

func oneOf(v string, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(v, n) {
			return true
		}
	}
	return false
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// applyTags sets a record's configuration from tags, refusing to contradict
// a configuration the record states.
func applyTags(r *results.Record, tags map[string]string) error {
	setName := func(field *string, what, v string) error {
		cur := strings.TrimSpace(*field)
		if cur != "" && !strings.EqualFold(cur, "auto") && !strings.EqualFold(cur, v) {
			return fmt.Errorf("tag %s=%s contradicts the record's %s %s", what, v, what, cur)
		}
		*field = v
		return nil
	}
	setInt := func(field *int64, what, v string) error {
		n, err := size.Parse(v)
		if err != nil {
			return err
		}
		if *field != 0 && *field != n {
			return fmt.Errorf("tag %s=%s contradicts the record's %s %d", what, v, what, *field)
		}
		*field = n
		return nil
	}
	for k, v := range tags {
		var err error
		switch k {
		case "proto":
			err = setName(&r.Protocol, "protocol", v)
		case "algo":
			err = setName(&r.Algorithm, "algorithm", v)
		case "channels":
			ch := int64(r.Channels)
			err = setInt(&ch, "channels", v)
			r.Channels = int(ch)
		case "buffsize":
			err = setInt(&r.BuffSize, "buffsize", v)
		case "hosts":
			h := int64(r.NHosts)
			if h == 1 {
				h = 0 // a log that did not know its hosts says 1
			}
			err = setInt(&h, "hosts", v)
			r.NHosts = int(h)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
