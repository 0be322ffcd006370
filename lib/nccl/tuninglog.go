package nccl

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Choice is what NCCL says it ran for one collective call, from its
// NCCL_DEBUG_SUBSYS=TUNING log (rank 0 prints one line a call).
type Choice struct {
	Coll      string // "AllReduce"; "" in the older format, which names none
	Bytes     int64
	Algo      string // "Ring", "Tree", "NVLS", ...
	Proto     string // "LL", "LL128", "Simple"
	NChannels int    // 0 when the line does not say
}

// The two formats NCCL has printed:
//
//	AllReduce: 4096 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}   (2.19 on)
//	4096 Bytes -> Algo 1 proto 2 time 12.500000                          (before)
var (
	tuningNamed = regexp.MustCompile(`(\w+): +(\d+) Bytes -> Algo (\w+) proto (\w+)(?: channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\})?`)
	tuningCoded = regexp.MustCompile(`(\d+) Bytes -> Algo (\d+) proto (\d+) time`)
)

// NCCL's algorithm and protocol names and their enum order (nccl.h,
// src/include/nccl_common.h), spelled as gccl spells Ring, Tree, LL,
// LL128 and Simple.
var (
	algoNames  = []string{"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"}
	protoNames = []string{"LL", "LL128", "Simple"}
)

// canonical spells a name as the list does, ignoring case ("RING" is
// "Ring"); an unknown name is kept.
func canonical(names []string, s string) string {
	for _, n := range names {
		if strings.EqualFold(n, s) {
			return n
		}
	}
	return s
}

// ParseTuningLine reads one line of NCCL's log; ok is false for a line
// that is not a tuning decision.
func ParseTuningLine(line string) (c Choice, ok bool) {
	if m := tuningNamed.FindStringSubmatch(line); m != nil {
		c.Coll = m[1]
		c.Bytes, _ = strconv.ParseInt(m[2], 10, 64)
		c.Algo, c.Proto = canonical(algoNames, m[3]), canonical(protoNames, m[4])
		if m[5] != "" {
			lo, err1 := strconv.Atoi(m[5])
			hi, err2 := strconv.Atoi(m[6])
			if err1 == nil && err2 == nil && hi >= lo {
				c.NChannels = hi - lo + 1
			}
		}
		return c, true
	}
	if m := tuningCoded.FindStringSubmatch(line); m != nil {
		c.Bytes, _ = strconv.ParseInt(m[1], 10, 64)
		a, _ := strconv.Atoi(m[2])
		p, _ := strconv.Atoi(m[3])
		c.Algo, c.Proto = m[2], m[3]
		if a >= 0 && a < len(algoNames) {
			c.Algo = algoNames[a]
		}
		if p >= 0 && p < len(protoNames) {
			c.Proto = protoNames[p]
		}
		return c, true
	}
	return Choice{}, false
}

// TuningLog follows the file NCCL writes its debug log to
// (NCCL_DEBUG_FILE) and keeps the last decision per collective.
type TuningLog struct {
	f    *os.File
	r    *bufio.Reader
	part string            // a line NCCL has not finished writing
	last map[string]Choice // by collective, lower case; "" for the older format
}

// OpenTuningLog follows path from its start.
func OpenTuningLog(path string) (*TuningLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &TuningLog{f: f, r: bufio.NewReader(f), last: map[string]Choice{}}, nil
}

// Last reads what NCCL wrote since the last call and returns its latest
// decision for coll ("AllReduce"), or for any collective in the older
// format.
func (l *TuningLog) Last(coll string) (Choice, bool) {
	for {
		s, err := l.r.ReadString('\n')
		if err != nil { // EOF: keep the partial line for the next read
			l.part += s
			break
		}
		s, l.part = l.part+s, ""
		if c, ok := ParseTuningLine(s); ok {
			l.last[strings.ToLower(c.Coll)] = c
		}
	}
	if c, ok := l.last[strings.ToLower(coll)]; ok {
		return c, true
	}
	c, ok := l.last[""]
	return c, ok
}

// Close stops following the file.
func (l *TuningLog) Close() error { return l.f.Close() }

// TuningLogWanted says whether NCCL's environment asks for its TUNING
// log (NCCL_DEBUG=INFO or TRACE, NCCL_DEBUG_SUBSYS naming TUNING or ALL),
// and where it goes: NCCL_DEBUG_FILE with %h and %p expanded as NCCL
// does, or "" when NCCL would print it on stdout.
func TuningLogWanted(lookup func(string) (string, bool), host string, pid int) (wanted bool, file string) {
	level, _ := lookup("NCCL_DEBUG")
	level = strings.ToUpper(strings.TrimSpace(level))
	if level != "INFO" && level != "TRACE" {
		return false, ""
	}
	subsys, _ := lookup("NCCL_DEBUG_SUBSYS")
	on := false
	for _, s := range strings.Split(subsys, ",") {
		s = strings.ToUpper(strings.TrimSpace(s))
		if s == "TUNING" || s == "ALL" {
			on = true
		}
		if s == "^TUNING" {
			on = false
		}
	}
	if !on {
		return false, ""
	}
	f, _ := lookup("NCCL_DEBUG_FILE")
	f = strings.TrimSpace(f)
	return true, strings.NewReplacer("%h", host, "%p", strconv.Itoa(pid)).Replace(f)
}
