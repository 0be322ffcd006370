package sysmem

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const (
	gib = int64(1) << 30
	mib = int64(1) << 20
)

// tree writes files (path under root: contents) into a fresh root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// meminfo is a /proc/meminfo of total and available GiB.
func meminfo(total, avail int64) string {
	return "MemTotal:       " + itoa(total*gib>>10) + " kB\nMemFree:        1000 kB\nMemAvailable:   " + itoa(avail*gib>>10) + " kB\nBuffers:        0 kB\n"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The mount tables of a pure v2 host, a hybrid one (memory on v1, as on
// this project's CI VM) and a container whose cgroup2 mount shows only
// its own cgroup.
const (
	mountsV2 = "22 1 0:21 / /sys rw - sysfs sysfs rw\n" +
		"30 22 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
	mountsHybrid = "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
		"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	mountsContainer = "612 611 0:26 /kubepods/pod1/ctr /sys/fs/cgroup ro,nosuid shared:9 - cgroup2 cgroup2 rw\n"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		files    map[string]string
		want     Limit
		wantErr  string // a substring of the error; "" for none
		noTarget bool   // the error wraps fs.ErrNotExist
	}{
		{
			name:  "host only: no /proc/self/cgroup",
			files: map[string]string{"proc/meminfo": meminfo(16, 12)},
			want:  Limit{Max: 16 * gib, Used: 4 * gib, Left: 12 * gib, Kind: "host memory", Path: "/proc/meminfo"},
		},
		{
			name:  "old kernel: no MemAvailable, MemTotal stands in",
			files: map[string]string{"proc/meminfo": "MemTotal: 1048576 kB\nMemFree: 10 kB\n"},
			want:  Limit{Max: gib, Used: 0, Left: gib, Kind: "host memory", Path: "/proc/meminfo"},
		},
		{
			name: "v2 nested: the parent's limit binds the child",
			files: map[string]string{
				"proc/meminfo":                       meminfo(64, 60),
				"proc/self/cgroup":                   "0::/a/b/c\n",
				"proc/self/mountinfo":                mountsV2,
				"sys/fs/cgroup/a/b/c/memory.max":     "max\n",
				"sys/fs/cgroup/a/b/c/memory.current": "1000\n",
				"sys/fs/cgroup/a/b/memory.max":       "3221225472\n",
				"sys/fs/cgroup/a/b/memory.current":   "1073741824\n",
				"sys/fs/cgroup/a/b/memory.stat":      "anon 805306368\nfile 268435456\ninactive_file 268435456\nactive_file 0\n",
				"sys/fs/cgroup/a/memory.max":         "8589934592\n",
				"sys/fs/cgroup/a/memory.current":     "2147483648\n",
				"sys/fs/cgroup/memory.stat":          "the root has no memory.max\n",
			},
			want: Limit{Max: 3 * gib, Used: 768 * mib, Left: 3*gib - 768*mib, Kind: "cgroup v2 limit", Path: "/sys/fs/cgroup/a/b/memory.max"},
		},
		{
			name: "v2 nested: a grandparent nearly full is tighter than a child's larger headroom",
			files: map[string]string{
				"proc/meminfo":                     meminfo(64, 60),
				"proc/self/cgroup":                 "0::/a/b\n",
				"proc/self/mountinfo":              mountsV2,
				"sys/fs/cgroup/a/b/memory.max":     "4294967296\n",
				"sys/fs/cgroup/a/b/memory.current": "0\n",
				"sys/fs/cgroup/a/memory.max":       "8589934592\n",
				"sys/fs/cgroup/a/memory.current":   "7516192768\n", // 7 GiB: siblings use it
			},
			want: Limit{Max: 8 * gib, Used: 7 * gib, Left: gib, Kind: "cgroup v2 limit", Path: "/sys/fs/cgroup/a/memory.max"},
		},
		{
			name: "v2 max everywhere: the host's",
			files: map[string]string{
				"proc/meminfo":        meminfo(16, 10),
				"proc/self/cgroup":    "0::/user.slice/session-1.scope\n",
				"proc/self/mountinfo": mountsV2,
				"sys/fs/cgroup/user.slice/session-1.scope/memory.max": "max\n",
				"sys/fs/cgroup/user.slice/memory.max":                 "max\n",
			},
			want: Limit{Max: 16 * gib, Used: 6 * gib, Left: 10 * gib, Kind: "host memory", Path: "/proc/meminfo"},
		},
		{
			name: "a cgroup limit above what the host has left: the host's",
			files: map[string]string{
				"proc/meminfo":                 meminfo(16, 2),
				"proc/self/cgroup":             "0::/job\n",
				"proc/self/mountinfo":          mountsV2,
				"sys/fs/cgroup/job/memory.max": "8589934592\n", "sys/fs/cgroup/job/memory.current": "0\n",
			},
			want: Limit{Max: 16 * gib, Used: 14 * gib, Left: 2 * gib, Kind: "host memory", Path: "/proc/meminfo"},
		},
		{
			name: "v2 in a container: the mount shows the container's own cgroup at the mount point",
			files: map[string]string{
				"proc/meminfo":                 meminfo(64, 60),
				"proc/self/cgroup":             "0::/kubepods/pod1/ctr\n",
				"proc/self/mountinfo":          mountsContainer,
				"sys/fs/cgroup/memory.max":     "2147483648\n",
				"sys/fs/cgroup/memory.current": "536870912\n",
			},
			want: Limit{Max: 2 * gib, Used: 512 * mib, Left: 1536 * mib, Kind: "cgroup v2 limit", Path: "/sys/fs/cgroup/memory.max"},
		},
		{
			name: "v2 in a container, the cgroup outside what the mount shows: the host's",
			files: map[string]string{
				"proc/meminfo":             meminfo(8, 8),
				"proc/self/cgroup":         "0::/elsewhere\n",
				"proc/self/mountinfo":      mountsContainer,
				"sys/fs/cgroup/memory.max": "1024\n", "sys/fs/cgroup/memory.current": "0\n",
			},
			want: Limit{Max: 8 * gib, Used: 0, Left: 8 * gib, Kind: "host memory", Path: "/proc/meminfo"},
		},
		{
			name: "v2 without mountinfo: /sys/fs/cgroup",
			files: map[string]string{
				"proc/meminfo":                 meminfo(8, 8),
				"proc/self/cgroup":             "0::/job\n",
				"sys/fs/cgroup/job/memory.max": "1073741824", "sys/fs/cgroup/job/memory.current": "1073741824",
			},
			want: Limit{Max: gib, Used: gib, Left: 0, Kind: "cgroup v2 limit", Path: "/sys/fs/cgroup/job/memory.max"},
		},
		{
			name: "over its limit (file cache not yet reclaimed, no stat): nothing left, not negative",
			files: map[string]string{
				"proc/meminfo":                 meminfo(8, 8),
				"proc/self/cgroup":             "0::/job\n",
				"proc/self/mountinfo":          mountsV2,
				"sys/fs/cgroup/job/memory.max": "1073741824", "sys/fs/cgroup/job/memory.current": "2147483648",
			},
			want: Limit{Max: gib, Used: 2 * gib, Left: 0, Kind: "cgroup v2 limit", Path: "/sys/fs/cgroup/job/memory.max"},
		},
		{
			name: "v1: the memory controller's hierarchy, the root's huge limit is none",
			files: map[string]string{
				"proc/meminfo":        meminfo(24, 23),
				"proc/self/cgroup":    "5:devices:/\n4:memory:/gccltest\n1:cpu:/\n",
				"proc/self/mountinfo": mountsHybrid,
				"sys/fs/cgroup/memory/gccltest/memory.limit_in_bytes": "3221225472\n",
				"sys/fs/cgroup/memory/gccltest/memory.usage_in_bytes": "10485760\n",
				"sys/fs/cgroup/memory/gccltest/memory.stat":           "cache 0\ninactive_file 1048576\ntotal_inactive_file 2097152\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes":          "9223372036854771712\n",
				"sys/fs/cgroup/memory/memory.usage_in_bytes":          "713764864\n",
			},
			want: Limit{Max: 3 * gib, Used: 8 * mib, Left: 3*gib - 8*mib, Kind: "cgroup v1 limit", Path: "/sys/fs/cgroup/memory/gccltest/memory.limit_in_bytes"},
		},
		{
			name: "hybrid: v2 line and unified mount without memory files, memory on v1 with controllers joined",
			files: map[string]string{
				"proc/meminfo":                                   meminfo(24, 23),
				"proc/self/cgroup":                               "9:name=systemd:/\n4:cpu,memory:/a/b\n0::/\n",
				"proc/self/mountinfo":                            strings.Replace(mountsHybrid, "rw,memory\n", "rw,cpu,memory\n", 1),
				"sys/fs/cgroup/unified/cgroup.procs":             "1\n",
				"sys/fs/cgroup/memory/a/b/memory.limit_in_bytes": "-1\n",
				"sys/fs/cgroup/memory/a/memory.limit_in_bytes":   "2147483648\n",
				"sys/fs/cgroup/memory/a/memory.usage_in_bytes":   "1073741824\n",
			},
			want: Limit{Max: 2 * gib, Used: gib, Left: gib, Kind: "cgroup v1 limit", Path: "/sys/fs/cgroup/memory/a/memory.limit_in_bytes"},
		},
		{
			name: "v1 without mountinfo: /sys/fs/cgroup/memory",
			files: map[string]string{
				"proc/meminfo":     meminfo(24, 23),
				"proc/self/cgroup": "4:memory:/j\n",
				"sys/fs/cgroup/memory/j/memory.limit_in_bytes": "1073741824\n",
				"sys/fs/cgroup/memory/j/memory.usage_in_bytes": "0\n",
			},
			want: Limit{Max: gib, Used: 0, Left: gib, Kind: "cgroup v1 limit", Path: "/sys/fs/cgroup/memory/j/memory.limit_in_bytes"},
		},
		{
			name: "a mount point with a space (mountinfo's \\040)",
			files: map[string]string{
				"proc/meminfo":         meminfo(8, 8),
				"proc/self/cgroup":     "0::/j\n",
				"proc/self/mountinfo":  "30 22 0:26 / /cg\\040root rw - cgroup2 cgroup2 rw\n",
				"cg root/j/memory.max": "1073741824", "cg root/j/memory.current": "0",
			},
			want: Limit{Max: gib, Used: 0, Left: gib, Kind: "cgroup v2 limit", Path: "/cg root/j/memory.max"},
		},
		{
			name: "no cgroup files at all under the cgroup: the host's",
			files: map[string]string{
				"proc/meminfo":        meminfo(8, 8),
				"proc/self/cgroup":    "0::/gone\n",
				"proc/self/mountinfo": mountsV2,
			},
			want: Limit{Max: 8 * gib, Used: 0, Left: 8 * gib, Kind: "host memory", Path: "/proc/meminfo"},
		},
		{
			name:     "no /proc/meminfo (not Linux)",
			files:    map[string]string{"etc/hostname": "x\n"},
			wantErr:  "meminfo",
			noTarget: true,
		},
		{
			name:    "garbage meminfo",
			files:   map[string]string{"proc/meminfo": "MemTotal: lots kB\n"},
			wantErr: `/proc/meminfo: line "MemTotal: lots kB": lots is not a size in kB`,
		},
		{
			name:    "meminfo without units",
			files:   map[string]string{"proc/meminfo": "MemTotal: 1000\n"},
			wantErr: `want "MemTotal: <n> kB"`,
		},
		{
			name:    "meminfo without MemTotal",
			files:   map[string]string{"proc/meminfo": "MemFree: 1000 kB\n"},
			wantErr: "/proc/meminfo: no MemTotal",
		},
		{
			name: "garbage memory.max: the error names the file, the host's bound comes with it",
			files: map[string]string{
				"proc/meminfo":                   meminfo(8, 8),
				"proc/self/cgroup":               "0::/j\n",
				"proc/self/mountinfo":            mountsV2,
				"sys/fs/cgroup/j/memory.max":     "three gigs\n",
				"sys/fs/cgroup/j/memory.current": "0\n",
			},
			want:    Limit{Max: 8 * gib, Used: 0, Left: 8 * gib, Kind: "host memory", Path: "/proc/meminfo"},
			wantErr: `/sys/fs/cgroup/j/memory.max: "three gigs" is not a byte count (or "max")`,
		},
		{
			name: "a limit without its usage file",
			files: map[string]string{
				"proc/meminfo":               meminfo(8, 8),
				"proc/self/cgroup":           "0::/j\n",
				"proc/self/mountinfo":        mountsV2,
				"sys/fs/cgroup/j/memory.max": "1073741824\n",
			},
			want:    Limit{Max: 8 * gib, Used: 0, Left: 8 * gib, Kind: "host memory", Path: "/proc/meminfo"},
			wantErr: "the limit /sys/fs/cgroup/j/memory.max has no usage to compare with",
		},
		{
			name: "garbage usage",
			files: map[string]string{
				"proc/meminfo":                   meminfo(8, 8),
				"proc/self/cgroup":               "0::/j\n",
				"proc/self/mountinfo":            mountsV2,
				"sys/fs/cgroup/j/memory.max":     "1073741824\n",
				"sys/fs/cgroup/j/memory.current": "-5\n",
			},
			want:    Limit{Max: 8 * gib, Used: 0, Left: 8 * gib, Kind: "host memory", Path: "/proc/meminfo"},
			wantErr: `/sys/fs/cgroup/j/memory.current: "-5" is not a byte count`,
		},
		{
			name: "garbage /proc/self/cgroup",
			files: map[string]string{
				"proc/meminfo":     meminfo(8, 8),
				"proc/self/cgroup": "memory is fine\n",
			},
			want:    Limit{Max: 8 * gib, Used: 0, Left: 8 * gib, Kind: "host memory", Path: "/proc/meminfo"},
			wantErr: `/proc/self/cgroup: line "memory is fine": want hierarchy-id:controllers:/path`,
		},
		{
			name: "a non-numeric hierarchy id",
			files: map[string]string{
				"proc/meminfo":     meminfo(8, 8),
				"proc/self/cgroup": "x:memory:/j\n",
			},
			want:    Limit{Max: 8 * gib, Used: 0, Left: 8 * gib, Kind: "host memory", Path: "/proc/meminfo"},
			wantErr: `hierarchy id "x" is not a number`,
		},
		{
			name: "garbage mountinfo",
			files: map[string]string{
				"proc/meminfo":        meminfo(8, 8),
				"proc/self/cgroup":    "0::/j\n",
				"proc/self/mountinfo": "30 22 0:26 /\n",
			},
			want:    Limit{Max: 8 * gib, Used: 0, Left: 8 * gib, Kind: "host memory", Path: "/proc/meminfo"},
			wantErr: "/proc/self/mountinfo: line",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(tree(t, tc.files))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case tc.noTarget != (err != nil && errors.Is(err, fs.ErrNotExist)):
				t.Fatalf("error %v: wraps fs.ErrNotExist %v, want %v", err, errors.Is(err, fs.ErrNotExist), tc.noTarget)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestLimitString(t *testing.T) {
	l := Limit{Max: 3 * gib, Used: 5*mib + 200*1024, Left: 3*gib - 5*mib, Kind: "cgroup v1 limit", Path: "/sys/fs/cgroup/memory/j/memory.limit_in_bytes"}
	want := "3.0 GiB cgroup v1 limit (/sys/fs/cgroup/memory/j/memory.limit_in_bytes), 5.2 MiB in use"
	if got := l.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for b, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536 * mib: "1.5 GiB", 1 << 62: "4.0 EiB"} {
		if got := Human(b); got != want {
			t.Errorf("Human(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestParseLimit(t *testing.T) {
	for s, want := range map[string]struct {
		n       int64
		limited bool
		bad     bool
	}{
		"max\n":                 {0, false, false},
		"-1":                    {0, false, false},
		"9223372036854771712\n": {0, false, false}, // v1's none
		"4611686018427387904":   {0, false, false}, // 1<<62: none
		"4611686018427387903":   {1<<62 - 1, true, false},
		"3221225472\n":          {3 * gib, true, false},
		"0":                     {0, true, false},
		"":                      {0, false, true},
		"3G":                    {0, false, true},
		"max max":               {0, false, true},
		"-2":                    {0, false, true},
	} {
		n, limited, err := parseLimit(s)
		if (err != nil) != want.bad || (err == nil && (n != want.n || limited != want.limited)) {
			t.Errorf("parseLimit(%q) = %d, %v, %v; want %d, %v, error %v", s, n, limited, err, want.n, want.limited, want.bad)
		}
	}
}

// TestReadThisMachine: the real trees give a bound no larger than the
// host's memory, with something left (the test itself runs).
func TestReadThisMachine(t *testing.T) {
	l, err := Read("/")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("no /proc/meminfo here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.Max <= 0 || l.Left <= 0 || l.Left > l.Max || l.Used < 0 {
		t.Errorf("implausible bound %+v", l)
	}
	t.Logf("this process: %v, %s left", l, Human(l.Left))
}
