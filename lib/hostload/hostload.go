// Package hostload tells how many of this process's processors other
// programs keep busy: the CPU time of the processors this process may run
// on (Linux's /proc/stat), less the job's own processes' (/proc/PID/stat),
// over a window. The stack's waits spin only while every runner has a
// processor; a busy loop of another program on one of 2 cores makes two
// spinning ranks share the other, and each of their operations wait out
// the operating system's time slices (8 B allreduce: 0.8 us -> 30-50 us).
//
// The parsing and the arithmetic are pure; Sampler is the thin shell that
// reads the files.
package hostload

import (
	"bytes"
	"fmt"
	"strconv"
)

// CPUTimes is the busy and total time of a set of processors, in the
// kernel's clock ticks (USER_HZ), summed over them.
type CPUTimes struct {
	Busy, Total uint64
	CPUs        int // how many processors were summed
}

// ParseStat sums the lines "cpuN ..." of /proc/stat for the processors in
// cpus (all of them when cpus is nil). Busy is user, nice, system, irq,
// softirq and steal (time a hypervisor gave another guest is time this
// one could not run); Total adds idle and iowait. guest and guest_nice
// are inside user and nice already.
func ParseStat(data []byte, cpus []int) (CPUTimes, error) {
	want := map[int]bool{}
	for _, c := range cpus {
		want[c] = true
	}
	var t CPUTimes
	for line := range bytes.Lines(data) {
		f := bytes.Fields(line)
		if len(f) < 5 || !bytes.HasPrefix(f[0], []byte("cpu")) || len(f[0]) == 3 {
			continue // not a processor's line (or the sum of all)
		}
		n, err := strconv.Atoi(string(f[0][3:]))
		if err != nil {
			return CPUTimes{}, fmt.Errorf("/proc/stat: line %q: %w", f[0], err)
		}
		if cpus != nil && !want[n] {
			continue
		}
		var v [8]uint64 // user nice system idle iowait irq softirq steal
		for i := range v {
			if i+1 >= len(f) {
				break
			}
			if v[i], err = strconv.ParseUint(string(f[i+1]), 10, 64); err != nil {
				return CPUTimes{}, fmt.Errorf("/proc/stat: %s field %d: %w", f[0], i+1, err)
			}
		}
		busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
		t.Busy += busy
		t.Total += busy + v[3] + v[4]
		t.CPUs++
	}
	if t.CPUs == 0 {
		return CPUTimes{}, fmt.Errorf("/proc/stat: no line for processors %v", cpus)
	}
	return t, nil
}

// ParseProcStat is a process's user and system time, in clock ticks, from
// its /proc/PID/stat: fields 14 and 15, counted after the command's
// closing parenthesis (the command may hold spaces and parentheses).
func ParseProcStat(data []byte) (uint64, error) {
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/PID/stat: no command in %q", data)
	}
	f := bytes.Fields(data[end+1:])
	// f[0] is field 3 (state): utime is field 14, f[11].
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/PID/stat: %d fields after the command, want at least 13", len(f))
	}
	var sum uint64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/stat: %w", err)
		}
		sum += v
	}
	return sum, nil
}

// Sample is one look: the processors' times and the job's own.
type Sample struct {
	CPU CPUTimes
	Own uint64 // the job's processes' user and system ticks
}

// Others is how many processors other programs kept busy between a and b,
// on average: the processors' busy time less the job's own, over the time
// that passed (their total over their count). 0 when no time passed or a
// counter went back (a process of the job ended, its time gone).
func Others(a, b Sample) float64 {
	if b.CPU.Total <= a.CPU.Total || b.CPU.Busy < a.CPU.Busy || b.Own < a.Own || b.CPU.CPUs == 0 {
		return 0
	}
	busy := float64(b.CPU.Busy - a.CPU.Busy)
	own := float64(b.Own - a.Own)
	elapsed := float64(b.CPU.Total-a.CPU.Total) / float64(b.CPU.CPUs)
	return max(busy-own, 0) / elapsed
}

// Taken is how many whole processors others keep: Others rounded to the
// nearest, so that a program busy on one processor takes it, and the
// odd interrupt or daemon (a few percent) takes none.
func Taken(others float64) int { return int(others + 0.5) }
