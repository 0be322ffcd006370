package ccl

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// modelCores is the processor count the cost model prices ranks against:
// GOMAXPROCS, or fewer when those processors are hardware threads sharing
// cores: ranks that wait by spinning on two threads of one core share its
// execution units, so past the physical cores every step pays the model's
// oversubscription term. (It does not explain the collapse measured on the
// GPU host's 16 cores, which report one thread each: 16 ranks of one
// process ran an 8 B ring or tree allreduce in 60-600 us, 8 ranks in
// 10-20 us; see docs/PERFORMANCE.md.)
func modelCores(procs int) int {
	if phys := physicalCores(); phys > 0 && phys < procs {
		return phys
	}
	return procs
}

// physicalCores counts the distinct cores (package, core id) of the
// processors this process may run on, from Linux's sysfs; 0 when unknown.
func physicalCores() int {
	if runtime.GOOS != "linux" {
		return 0
	}
	cpus, err := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/topology/core_id")
	if err != nil || len(cpus) == 0 {
		return 0
	}
	cores := map[string]bool{}
	for _, p := range cpus {
		core, err1 := os.ReadFile(p)
		pkg, err2 := os.ReadFile(filepath.Join(filepath.Dir(p), "physical_package_id"))
		if err1 != nil || err2 != nil {
			return 0
		}
		cores[strings.TrimSpace(string(pkg))+"/"+strings.TrimSpace(string(core))] = true
	}
	// Count only as many as the processors Go may use.
	return min(len(cores), runtime.NumCPU())
}
