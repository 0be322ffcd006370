// Package sysmem says how much memory this process may still take: what
// the host has available, or less where a memory cgroup (v2 memory.max,
// v1 memory.limit_in_bytes) around the process, or around one of its
// ancestors, bounds it. A program that sizes buffers by it is refused by
// its own check, not killed by the OOM killer.
package sysmem

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Limit is one bound on this process's memory.
type Limit struct {
	Max  int64  // the bound: a cgroup's limit, or the host's MemTotal
	Used int64  // bytes in use under it, less reclaimable file cache
	Left int64  // Max - Used, at least 0: what may still be allocated
	Kind string // "cgroup v2 limit", "cgroup v1 limit" or "host memory"
	Path string // the file Max was read from, as this machine names it
}

// String names the bound: "3.0 GiB cgroup v1 limit
// (/sys/fs/cgroup/memory/job/memory.limit_in_bytes), 5.2 MiB in use".
func (l Limit) String() string {
	return fmt.Sprintf("%s %s (%s), %s in use", Human(l.Max), l.Kind, l.Path, Human(l.Used))
}

// Human writes a byte count in binary units, one decimal: "3.0 GiB".
func Human(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, u := float64(b), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return strconv.FormatInt(b, 10) + " B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[u]
}

// Read returns the tightest bound on this process's memory (the least
// Left) among the host's and those of its memory cgroups, reading the
// /proc and /sys trees under root ("/" for this machine's; tests pass a
// tree of their own). Without /proc/meminfo (not Linux) it fails with an
// error that wraps fs.ErrNotExist. When the cgroup files cannot be read
// or make no sense, it returns the host's bound with the error.
func Read(root string) (Limit, error) {
	best, err := readHost(root)
	if err != nil {
		return Limit{}, err
	}
	cgs, err := readCgroups(root)
	if err != nil {
		return best, err
	}
	for _, l := range cgs {
		if l.Left < best.Left {
			best = l
		}
	}
	return best, nil
}

// readHost is the host's bound from /proc/meminfo.
func readHost(root string) (Limit, error) {
	const p = "/proc/meminfo"
	b, err := os.ReadFile(filepath.Join(root, p))
	if err != nil {
		return Limit{}, fmt.Errorf("sysmem: %w", err)
	}
	total, avail, err := parseMeminfo(string(b))
	if err != nil {
		return Limit{}, fmt.Errorf("sysmem: %s: %w", p, err)
	}
	return Limit{Max: total, Used: total - avail, Left: avail, Kind: "host memory", Path: p}, nil
}

// parseMeminfo reads MemTotal and MemAvailable (MemTotal on kernels
// older than 3.14, which have no MemAvailable), in bytes.
func parseMeminfo(s string) (total, avail int64, err error) {
	avail = -1
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || (f[0] != "MemTotal:" && f[0] != "MemAvailable:") {
			continue
		}
		if len(f) != 3 || f[2] != "kB" {
			return 0, 0, fmt.Errorf("line %q: want \"%s <n> kB\"", line, f[0])
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || kb < 0 || kb > 1<<53 {
			return 0, 0, fmt.Errorf("line %q: %s is not a size in kB", line, f[1])
		}
		if f[0] == "MemTotal:" {
			total = kb << 10
		} else {
			avail = kb << 10
		}
	}
	if total <= 0 {
		return 0, 0, errors.New("no MemTotal")
	}
	if avail < 0 || avail > total {
		avail = total
	}
	return total, avail, nil
}

// cgroupFiles are one cgroup version's memory files.
type cgroupFiles struct {
	kind              string // Limit.Kind
	limit, usage      string
	stat, inactiveKey string // memory.stat and its reclaimable file cache
	defaultMount      string // where the hierarchy is without mountinfo
}

var (
	v2Files = cgroupFiles{kind: "cgroup v2 limit", limit: "memory.max", usage: "memory.current",
		stat: "memory.stat", inactiveKey: "inactive_file", defaultMount: "/sys/fs/cgroup"}
	// v1's usage and total_inactive_file count the cgroup's descendants
	// too, as v2's do.
	v1Files = cgroupFiles{kind: "cgroup v1 limit", limit: "memory.limit_in_bytes", usage: "memory.usage_in_bytes",
		stat: "memory.stat", inactiveKey: "total_inactive_file", defaultMount: "/sys/fs/cgroup/memory"}
)

// readCgroups returns the bound of every memory cgroup from this
// process's up to its hierarchy's root that sets one: a parent's limit
// binds its children, and its usage counts theirs. None without
// /proc/self/cgroup.
func readCgroups(root string) ([]Limit, error) {
	b, err := os.ReadFile(filepath.Join(root, "/proc/self/cgroup"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sysmem: %w", err)
	}
	v2, v1, err := parseProcCgroup(string(b))
	if err != nil {
		return nil, fmt.Errorf("sysmem: /proc/self/cgroup: %w", err)
	}
	var mounts []mount
	if mi, err := os.ReadFile(filepath.Join(root, "/proc/self/mountinfo")); err == nil {
		if mounts, err = parseMountinfo(string(mi)); err != nil {
			return nil, fmt.Errorf("sysmem: /proc/self/mountinfo: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("sysmem: %w", err)
	}
	var out []Limit
	for _, h := range []struct {
		cgPath string
		files  cgroupFiles
		match  func(mount) bool
	}{
		{v2, v2Files, func(m mount) bool { return m.fsType == "cgroup2" }},
		{v1, v1Files, func(m mount) bool { return m.fsType == "cgroup" && hasOption(m.superOpts, "memory") }},
	} {
		if h.cgPath == "" {
			continue
		}
		dir, top, ok := cgroupDir(h.cgPath, mounts, h.match, h.files.defaultMount)
		if !ok {
			continue // the cgroup is outside what this mount shows
		}
		ls, err := walkLimits(root, dir, top, h.files)
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
	}
	return out, nil
}

// parseProcCgroup finds, in /proc/self/cgroup, this process's cgroup in
// the v2 hierarchy ("0::/path") and in the v1 hierarchy of the memory
// controller ("4:memory:/path"); "" where there is none.
func parseProcCgroup(s string) (v2, v1 string, err error) {
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			return "", "", fmt.Errorf("line %q: want hierarchy-id:controllers:/path", line)
		}
		if _, err := strconv.Atoi(f[0]); err != nil {
			return "", "", fmt.Errorf("line %q: hierarchy id %q is not a number", line, f[0])
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case hasOption(f[1], "memory"):
			v1 = f[2]
		}
	}
	return v2, v1, nil
}

// mount is one line of /proc/self/mountinfo.
type mount struct {
	root, point, fsType, superOpts string
}

// parseMountinfo reads /proc/self/mountinfo: "36 35 98:0 /root /point
// opts [optional...] - fstype source superopts".
func parseMountinfo(s string) ([]mount, error) {
	var out []mount
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 6 || len(g) < 3 {
			return nil, fmt.Errorf("line %q: want \"id parent major:minor root point options ... - type source options\"", line)
		}
		out = append(out, mount{root: unescape(f[3]), point: unescape(f[4]), fsType: g[0], superOpts: g[2]})
	}
	return out, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// cgroupDir is where cgroup cgPath's files are: under the first mount
// the hierarchy has (defaultMount, mounted at its root, without
// mountinfo) that shows it, with top the mount point (the highest
// cgroup this process can see). !ok when no mount shows it, e.g. a
// container's view of a cgroup outside it.
func cgroupDir(cgPath string, mounts []mount, match func(mount) bool, defaultMount string) (dir, top string, ok bool) {
	if strings.Contains(cgPath, "/..") {
		return "", "", false // outside this cgroup namespace
	}
	if mounts == nil {
		mounts = []mount{{root: "/", point: defaultMount}}
		match = func(mount) bool { return true }
	}
	for _, m := range mounts {
		if !match(m) {
			continue
		}
		rel, ok := within(cgPath, m.root)
		if ok {
			return path.Join(m.point, rel), path.Clean(m.point), true
		}
	}
	return "", "", false
}

// within is p relative to root when p is root or below it.
func within(p, root string) (string, bool) {
	p, root = path.Clean(p), path.Clean(root)
	if root == "/" {
		return p, true
	}
	if p == root {
		return "/", true
	}
	if strings.HasPrefix(p, root+"/") {
		return p[len(root):], true
	}
	return "", false
}

// walkLimits reads the bound of dir and of each parent up to top, those
// that set one.
func walkLimits(root, dir, top string, files cgroupFiles) ([]Limit, error) {
	var out []Limit
	for d := dir; ; d = path.Dir(d) {
		l, ok, err := readLevel(root, d, files)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, l)
		}
		if d == top || d == "/" {
			return out, nil
		}
	}
}

// readLevel is the bound cgroup directory d sets, if any: none when it
// has no limit file (v2's root cgroup; the v2 hierarchy of a hybrid
// system, whose memory controller is on v1) or the limit is unlimited.
func readLevel(root, d string, files cgroupFiles) (Limit, bool, error) {
	limPath := path.Join(d, files.limit)
	b, err := os.ReadFile(filepath.Join(root, limPath))
	if errors.Is(err, os.ErrNotExist) {
		return Limit{}, false, nil
	}
	if err != nil {
		return Limit{}, false, fmt.Errorf("sysmem: %w", err)
	}
	lim, limited, err := parseLimit(string(b))
	if err != nil {
		return Limit{}, false, fmt.Errorf("sysmem: %s: %w", limPath, err)
	}
	if !limited {
		return Limit{}, false, nil
	}
	usePath := path.Join(d, files.usage)
	b, err = os.ReadFile(filepath.Join(root, usePath))
	if err != nil {
		return Limit{}, false, fmt.Errorf("sysmem: the limit %s has no usage to compare with: %v", limPath, err)
	}
	used, err := parseBytes(string(b))
	if err != nil {
		return Limit{}, false, fmt.Errorf("sysmem: %s: %w", usePath, err)
	}
	// Inactive file cache is charged to the cgroup but reclaimed before
	// the OOM killer acts: not in the way of a new allocation.
	if st, err := os.ReadFile(filepath.Join(root, path.Join(d, files.stat))); err == nil {
		if v, ok := statValue(string(st), files.inactiveKey); ok {
			used -= min(v, used)
		}
	}
	return Limit{Max: lim, Used: used, Left: max(0, lim-used), Kind: files.kind, Path: limPath}, true, nil
}

// unlimitedV1 and above is no limit: v1 reports "none" as the largest
// page-aligned int64 (9223372036854771712).
const unlimitedV1 = 1 << 62

// parseLimit reads a limit file: "max" (v2) or a huge number (v1) is
// none.
func parseLimit(s string) (n int64, limited bool, err error) {
	s = strings.TrimSpace(s)
	if s == "max" || s == "-1" {
		return 0, false, nil
	}
	n, err = parseBytes(s)
	if err != nil {
		return 0, false, fmt.Errorf("%w (or \"max\")", err)
	}
	if n >= unlimitedV1 {
		return 0, false, nil
	}
	return n, true, nil
}

// parseBytes reads a byte count.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a byte count", s)
	}
	return int64(min(n, 1<<63-1)), nil
}

// statValue is key's value in a memory.stat ("key value" lines).
func statValue(s, key string) (int64, bool) {
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, err := parseBytes(v)
			return n, err == nil
		}
	}
	return 0, false
}
