package ccl

import (
	"os"
	"path/filepath"
	"testing"
)

// RemoveSegments removes the names of every live set's segments, for a
// process that exits without Destroy; a set's unmap takes it off the list.
func TestRemoveSegments(t *testing.T) {
	dir := t.TempDir()
	j := &job{dir: dir, prefix: "gccl-test0123"}
	liveJobs.add(j)
	for _, name := range []string{"gccl-test0123-bells-0", "gccl-test0123-r0-r1-ch0", "gccl-other-bells-0"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	RemoveSegments()
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "gccl-other-bells-0" {
		t.Errorf("left %v, want only another set's segment", left)
	}
	j.unmap()
	liveJobs.mu.Lock()
	_, still := liveJobs.m[j]
	liveJobs.mu.Unlock()
	if still {
		t.Error("an unmapped set is still live")
	}
}
