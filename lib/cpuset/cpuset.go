// Package cpuset tells which processors this process may run on and
// which cores they belong to: what the launcher splits among its processes
// and what the cost model counts.
package cpuset

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CoreIDs names the core of each of cpus (package << 16 | core id, from
// Linux's sysfs), so that processes can count the cores they share; nil
// when unknown.
func CoreIDs(cpus []int) []int {
	if len(cpus) == 0 {
		return nil
	}
	ids := make([]int, len(cpus))
	for i, c := range cpus {
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/", c)
		core, err1 := readInt(dir + "core_id")
		pkg, err2 := readInt(dir + "physical_package_id")
		if err1 != nil || err2 != nil {
			return nil
		}
		ids[i] = pkg<<16 | core&0xffff
	}
	return ids
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// CountCores counts the distinct cores of CoreIDs' answer (0: unknown).
func CountCores(ids []int) int {
	seen := map[int]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	return len(seen)
}
