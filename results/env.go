package results

import (
	"sort"
	"strconv"
	"strings"
)

// recordedGCCL are the gccl variables a Record keeps: the ones that change
// what runs (the configuration, the tuning inputs, the transports, the
// timeouts). Everything else gccl reads stays out: the job's token and its
// bootstrap root (GCCL_JOB_TOKEN, GCCL_COMM_ID), the launcher's job id and
// a process's place in the job (GCCL_LAUNCH_*), test hooks. A new variable
// is recorded only once it is added here (TestRecordedCoversConfig checks
// that every variable ccl.Config reads is).
var recordedGCCL = map[string]bool{
	"GCCL_ALGO": true, "GCCL_PROTO": true, "GCCL_NCHANNELS": true, "GCCL_MAX_NCHANNELS": true,
	"GCCL_BUFFSIZE": true, "GCCL_LL_BUFFSIZE": true, "GCCL_LL128_BUFFSIZE": true,
	"GCCL_TUNING_FILE": true, "GCCL_MODEL_FILE": true, "GCCL_P2P_DIRECT_DISABLE": true,
	"GCCL_TIMEOUT": true, "GCCL_RANKS_PER_HOST": true, "GCCL_DEBUG": true,
	"GCCL_SOCKET_IFNAME": true, "GCCL_NET_SPIN": true, "GCCL_NSOCKS": true, "GCCL_NSOCKS_THREADS": true,
	"GCCL_HOSTID": true, "GCCL_SINGLE_HOST": true, "GCCL_SHM_DIR": true, "GCCL_MIN_BW": true,
	"GCCL_NCCL_LIBRARY": true, "GCCL_CUDART_LIBRARY": true, "GCCL_NCCL_INIT": true,
	"GCCL_NCCL_CALL": true, "GCCL_NCCL_ALLOC": true,
}

// droppedNCCL are NCCL variables that name a job rather than configure
// it: NCCL_COMM_ID is its bootstrap root's address.
var droppedNCCL = map[string]bool{"NCCL_COMM_ID": true}

// secretWords mark a variable that may hold a credential, whatever its
// prefix: it is never recorded.
var secretWords = []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"}

// SecretName reports whether a name looks like a credential's (it
// contains TOKEN, SECRET, KEY, PASSWORD, PASSWD or CREDENTIAL, in any
// case): such a variable is never recorded, nor shown (package report).
func SecretName(name string) bool {
	upper := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	return false
}

// KeepEnv reports whether an environment variable belongs in a Record:
// the gccl variables of recordedGCCL, and NCCL's own (NCCL_*: its
// configuration, hundreds of variables that change with its versions, and
// nccl-tests' NCCL_TESTS_*) but NCCL_COMM_ID; never a name that looks like
// a credential (*TOKEN*, *SECRET*, *KEY*, *PASSWORD*). Everything else
// (PATH, HOME, launchers' variables, cloud credentials) stays out. Writers
// and readers both apply it, so an old file that kept more loses it when
// read.
func KeepEnv(key string) bool {
	if SecretName(key) {
		return false
	}
	switch {
	case strings.HasPrefix(key, "GCCL_"):
		return recordedGCCL[key]
	case strings.HasPrefix(key, "NCCL_"):
		return !droppedNCCL[key]
	}
	return false
}

// FilterEnv turns "K=V" entries (os.Environ(), nccl-tests' env list) into a
// map holding only the variables KeepEnv keeps; nil when none is left.
// Entries without '=' are skipped.
func FilterEnv(environ []string) map[string]string {
	var m map[string]string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !KeepEnv(k) {
			continue
		}
		if m == nil {
			m = make(map[string]string)
		}
		m[k] = v
	}
	return m
}

// filterEnvMap returns env without the keys KeepEnv refuses; nil when empty.
func filterEnvMap(env map[string]string) map[string]string {
	var m map[string]string
	for k, v := range env {
		if !KeepEnv(k) {
			continue
		}
		if m == nil {
			m = make(map[string]string, len(env))
		}
		m[k] = v
	}
	return m
}

// envList renders env (filtered) as sorted "K=V" entries.
func envList(env map[string]string) []string {
	m := filterEnvMap(env)
	list := make([]string, 0, len(m))
	for k, v := range m {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list
}

// The CSV env cell is "K=V;K=V", keys sorted. A '\' or ';' inside a key or
// a value, and a '=' inside a key, is escaped with a backslash, so any
// strings survive the round trip.

var (
	envKeyEscaper   = strings.NewReplacer(`\`, `\\`, ";", `\;`, "=", `\=`)
	envValueEscaper = strings.NewReplacer(`\`, `\\`, ";", `\;`)
)

func formatEnvCell(env map[string]string) string {
	m := filterEnvMap(env)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	list := make([]string, len(keys))
	for i, k := range keys {
		list[i] = envKeyEscaper.Replace(k) + "=" + envValueEscaper.Replace(m[k])
	}
	return strings.Join(list, ";")
}

func parseEnvCell(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	m := map[string]string{}
	var key, val, raw strings.Builder
	inValue := false // past the entry's first unescaped '='
	end := func() error {
		if !inValue || key.Len() == 0 {
			return &cellError{msg: "env entry " + strconv.Quote(raw.String()) + " is not K=V"}
		}
		if k := key.String(); KeepEnv(k) {
			m[k] = val.String()
		}
		key.Reset()
		val.Reset()
		raw.Reset()
		inValue = false
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			raw.WriteByte(c)
			i++
			c = s[i]
		case c == ';':
			if err := end(); err != nil {
				return nil, err
			}
			continue
		case c == '=' && !inValue:
			raw.WriteByte(c)
			inValue = true
			continue
		}
		raw.WriteByte(c)
		if inValue {
			val.WriteByte(c)
		} else {
			key.WriteByte(c)
		}
	}
	if err := end(); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// configFromEnv derives the requested configuration from NCCL_*/GCCL_*
// variables. full says the environment is a complete dump (nccl-tests writes
// the whole environment), so an unset variable means the default ("auto",
// 0); otherwise unset variables leave the fields unknown ("", 0).
func configFromEnv(r *Record, env map[string]string, full bool) {
	get := func(names ...string) (string, bool) {
		for _, n := range names {
			if v, ok := env[n]; ok && v != "" {
				return v, true
			}
		}
		return "", false
	}
	if v, ok := get("GCCL_ALGO", "NCCL_ALGO"); ok {
		r.Algorithm = v
	} else if full {
		r.Algorithm = "auto"
	}
	if v, ok := get("GCCL_PROTO", "NCCL_PROTO"); ok {
		r.Protocol = v
	} else if full {
		r.Protocol = "auto"
	}
	if v, ok := get("GCCL_NCHANNELS"); ok {
		r.Channels, _ = strconv.Atoi(v)
	} else {
		lo, okLo := get("NCCL_MIN_NCHANNELS")
		hi, okHi := get("NCCL_MAX_NCHANNELS")
		if okLo && okHi && lo == hi {
			r.Channels, _ = strconv.Atoi(lo)
		}
	}
	if v, ok := get("GCCL_BUFFSIZE", "NCCL_BUFFSIZE"); ok {
		r.BuffSize, _ = strconv.ParseInt(v, 0, 64)
	}
}

// cellError is a problem with one value, positioned later by its reader.
type cellError struct{ msg string }

func (e *cellError) Error() string { return e.msg }
