// constants_file.go: the constants file format: reading a JSON file over
// the defaults (every table keyed by name), walking and writing it back.

package tuning

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/gccl/gccl/lib/proto"
)

// twoShotFromOneShot sets the two-shot's constants from the one-shot's:
// the same base and hop (taken twice: Model.board), half the read rate.
// Only for files fitted before the two-shot existed, whose one-shot read
// rate was that of LL posts (every post was LL lines then).
// Measured on the 16-core Xeon, 2-16 ranks to 128 KiB, the two-shot read
// slower than the one-shot (small segments from many posts, two
// waits for the slowest rank; docs/log/performance-2026-11.md 12q).
func (c *Constants) twoShotFromOneShot() {
	c.BaseLatUs[TwoShot][proto.LL] = c.BaseLatUs[OneShot][proto.LL]
	for l := range c.StepLatUs {
		c.StepLatUs[l][TwoShot][proto.LL] = c.StepLatUs[l][OneShot][proto.LL]
	}
	c.MaxChannelBwGBs[TwoShot][proto.LL] = c.MaxChannelBwGBs[OneShot][proto.LL] / 2
}

// namesKey reports whether any object of the JSON data has the key,
// case-insensitively.
func namesKey(data []byte, key string) bool {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for k, x := range m {
			if strings.EqualFold(k, key) || walk(x) {
				return true
			}
		}
		return false
	}
	return walk(v)
}

// LoadConstants reads the constants file at path over DefaultConstants.
func LoadConstants(path string) (Constants, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Constants{}, fmt.Errorf("tuning constants: %w", err)
	}
	return ParseConstants(data, path)
}

// ParseConstants reads a JSON constants file over DefaultConstants: a key
// the file names replaces that one value, everything else keeps its
// default, so {"base_lat_us": {"Ring": {"LL": 1.1}}} changes one number.
// Table keys (algorithm, protocol, link names) are case-insensitive; field
// keys are exact. Unknown keys, names, duplicates, nulls, negative numbers
// and a version other than ConstantsVersion are errors that name the file
// (name) and the key path. The result is validated.
//
// A file that names OneShot constants but no TwoShot one (one written
// before the two-shot existed, like a host's fitted constants) prices it
// from its own OneShot constants, not the defaults': the two run on the
// same board. One that names neither keeps the defaults of both.
func ParseConstants(data []byte, name string) (Constants, error) {
	c := DefaultConstants()
	if err := decodeConstants(reflect.ValueOf(&c).Elem(), json.RawMessage(data), "", nil, name); err != nil {
		return Constants{}, err
	}
	if namesKey(data, OneShot.String()) && !namesKey(data, TwoShot.String()) {
		c.twoShotFromOneShot()
	}
	if err := c.validate(name); err != nil {
		return Constants{}, err
	}
	return c, nil
}

// decodeConstants decodes raw into v: a struct by its json tags, an array
// level by the names of its dimension (dims), a leaf by encoding/json.
func decodeConstants(v reflect.Value, raw json.RawMessage, path string, dims []string, file string) error {
	bad := func(p, format string, args ...any) error {
		return &ConstantsError{File: file, Path: p, Err: fmt.Errorf(format, args...)}
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return bad(path, "null is not a value")
	}
	switch {
	case v.Kind() == reflect.Struct:
		members, err := constMembers(raw)
		if err != nil {
			return bad(path, "want a JSON object of constants: %v", err)
		}
		keys := constKeys(v.Type())
		seen := map[string]bool{}
		for _, m := range members {
			i, ok := keys[m.key]
			if !ok {
				return bad(m.key, "unknown key (valid: %s)", strings.Join(sortedKeys(keys), ", "))
			}
			if seen[m.key] {
				return bad(m.key, "duplicate key")
			}
			seen[m.key] = true
			f := v.Type().Field(i)
			var fd []string
			if t := f.Tag.Get("dims"); t != "" {
				fd = strings.Split(t, ",")
			}
			if err := decodeConstants(v.Field(i), m.val, m.key, fd, file); err != nil {
				return err
			}
		}
		return nil
	case v.Kind() == reflect.Array:
		members, err := constMembers(raw)
		if err != nil {
			return bad(path, "want an object keyed by %s name (valid: %s): %v", dims[0], strings.Join(dimNames(dims[0]), ", "), err)
		}
		seen := map[int]string{}
		for _, m := range members {
			i, err := parseDim(dims[0], m.key)
			p := path + "." + m.key
			if err != nil {
				return bad(p, "%v", err)
			}
			if prev, dup := seen[i]; dup {
				return bad(p, "duplicate of %q", prev)
			}
			seen[i] = m.key
			if err := decodeConstants(v.Index(i), m.val, p, dims[1:], file); err != nil {
				return err
			}
		}
		return nil
	}
	// A leaf: decode into a fresh value so a failed decode leaves no trace.
	leaf := reflect.New(v.Type())
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(leaf.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return bad(path, "want %s, got JSON %s", leafKind(v.Type()), te.Value)
		}
		return bad(path, "want %s: %v", leafKind(v.Type()), err)
	}
	if f, ok := number(leaf.Elem()); ok && (f < 0 || math.IsNaN(f) || math.IsInf(f, 0)) {
		return bad(path, "%v is out of range (valid: a finite number >= 0)", f)
	}
	v.Set(leaf.Elem())
	return nil
}

func leafKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Float64:
		return "a number >= 0"
	}
	return "an integer >= 0"
}

// number reads a numeric leaf as float64.
func number(v reflect.Value) (float64, bool) {
	switch v.Kind() {
	case reflect.Float64:
		return v.Float(), true
	case reflect.Int, reflect.Int64:
		return float64(v.Int()), true
	}
	return 0, false
}

// constMember is one key and value of a JSON object, in file order.
type constMember struct {
	key string
	val json.RawMessage
}

// constMembers splits a JSON object into its members, keeping their order
// and duplicates (a map would drop both).
func constMembers(raw json.RawMessage) ([]constMember, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("got %s", raw)
	}
	var out []constMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var m constMember
		m.key = tok.(string) // an object's tokens alternate key, value
		if err := dec.Decode(&m.val); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("data after the object")
	}
	return out, nil
}

// constKeys maps each json tag of a struct type to its field index.
func constKeys(t reflect.Type) map[string]int {
	keys := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		if k := t.Field(i).Tag.Get("json"); k != "" {
			keys[k] = i
		}
	}
	return keys
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// dimNames lists the names that index a table dimension, in index order.
func dimNames(dim string) []string {
	switch dim {
	case "link":
		return linkNames[:]
	case "algo":
		return algoNames[:]
	}
	out := []string{}
	for _, p := range proto.All() {
		out = append(out, p.String())
	}
	return out
}

func parseDim(dim, s string) (int, error) {
	switch dim {
	case "link":
		l, err := ParseLink(s)
		return int(l), err
	case "algo":
		a, err := ParseAlgo(s)
		return int(a), err
	}
	p, err := proto.Parse(s)
	return int(p), err
}

// walkConstants calls fn on every leaf of the constants with its key path,
// in field and index order; fn returns false to stop.
func walkConstants(v reflect.Value, fn func(path string, v reflect.Value) bool) {
	var walk func(v reflect.Value, path string, dims []string) bool
	walk = func(v reflect.Value, path string, dims []string) bool {
		switch v.Kind() {
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				var fd []string
				if t := f.Tag.Get("dims"); t != "" {
					fd = strings.Split(t, ",")
				}
				if !walk(v.Field(i), f.Tag.Get("json"), fd) {
					return false
				}
			}
			return true
		case reflect.Array:
			names := dimNames(dims[0])
			for i := 0; i < v.Len(); i++ {
				if !walk(v.Index(i), path+"."+names[i], dims[1:]) {
					return false
				}
			}
			return true
		}
		return fn(path, v)
	}
	walk(v, "", nil)
}

// MarshalJSON writes the constants in the file format, every table keyed
// by name, so that ParseConstants(MarshalJSON(c)) == c.
func (c Constants) MarshalJSON() ([]byte, error) {
	var encode func(v reflect.Value, dims []string) any
	encode = func(v reflect.Value, dims []string) any {
		switch v.Kind() {
		case reflect.Struct:
			m := map[string]any{}
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				var fd []string
				if t := f.Tag.Get("dims"); t != "" {
					fd = strings.Split(t, ",")
				}
				m[f.Tag.Get("json")] = encode(v.Field(i), fd)
			}
			return m
		case reflect.Array:
			m := map[string]any{}
			names := dimNames(dims[0])
			for i := 0; i < v.Len(); i++ {
				m[names[i]] = encode(v.Index(i), dims[1:])
			}
			return m
		}
		return v.Interface()
	}
	return json.Marshal(encode(reflect.ValueOf(c), nil))
}

// String is the constants as an indented constants file.
func (c Constants) String() string {
	b, err := c.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("tuning constants: %v", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}
