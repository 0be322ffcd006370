package perf

import (
	"fmt"
	"os"
	"sort"

	"github.com/gccl/gccl/lib/ccl"
	"github.com/gccl/gccl/results"
)

// The precedence rule of the perf binaries: a flag beats the environment.
//
// The GCCL_* variables that choose a configuration (ccl.ChoiceEnv) are read
// once, here, and resolved against the flags: a sweep axis given by a flag
// runs exactly as the flag says and its variable is ignored (with a note);
// a variable no flag overrides applies to every configuration, which is
// then labelled by what it forced. The stack is started with the resolved
// configuration (it reads no variable itself), so nothing changes it
// behind the labels; the variables that do not choose a configuration
// (LL buffers, debug, sockets, GCCL_HOSTID, GCCL_SOCKET_IFNAME,
// GCCL_NET_SPIN, GCCL_SHM_DIR) reach it the same way (stackConfig), and
// GCCL_TIMEOUT and GCCL_COMM_ID's host reach the bootstrap roots process
// 0 serves (joinJob).

// envSettings is what the environment asks for, as parsed by the stack.
type envSettings struct {
	cfg ccl.Config        // every GCCL_* variable applied to a zero Config
	set map[string]string // the ccl.ChoiceEnv variables that are set, and -T's and --ranks-per-host's
}

// envRead are the variables readEnv notes: those that choose a
// configuration, and those -T and --ranks-per-host override.
var envRead = append(append([]string(nil), ccl.ChoiceEnv...), ccl.EnvTimeout, ccl.EnvRanksPerHost)

// readEnv parses the stack's variables (an invalid one is a usage error
// naming it) and notes which choice variables are set.
func readEnv(lookup func(string) (string, bool)) (envSettings, error) {
	cfg, err := ccl.Config{}.FromLookup(lookup)
	if err != nil {
		return envSettings{}, usagef("%v", err)
	}
	e := envSettings{cfg: cfg}
	for _, k := range envRead {
		if v, ok := lookup(k); ok {
			if e.set == nil {
				e.set = map[string]string{}
			}
			e.set[k] = v
		}
	}
	return e, nil
}

// overriddenBy names the flag that overrides each variable, when given.
func (o *Options) overriddenBy() map[string]string {
	m := map[string]string{}
	if len(o.ConfigList) > 0 {
		m[ccl.EnvProto], m[ccl.EnvAlgo], m[ccl.EnvNChannels] = "--configs", "--configs", "--configs"
	}
	if len(o.Protos) > 0 {
		m[ccl.EnvProto] = "--proto"
	}
	if len(o.Algos) > 0 || o.algoAll {
		m[ccl.EnvAlgo] = "--algo"
	}
	if len(o.Channels) > 0 {
		m[ccl.EnvNChannels] = "--nchannels"
	}
	if len(o.BuffSizes) > 0 {
		m[ccl.EnvBuffSize] = "--buffsize"
	}
	if o.timeoutSet {
		m[ccl.EnvTimeout] = "-T/--timeout"
	}
	if o.ranksPerHostSet {
		m[ccl.EnvRanksPerHost] = "--ranks-per-host"
	}
	if o.TuningFile != "" {
		m[ccl.EnvTuningFile] = "--tuning-file"
	}
	return m
}

// stackConfig is the embedded stack's configuration before a RunConfig
// sets the choice fields: every GCCL_* variable, read once (readEnv), and
// the table --tuning-file names over GCCL_TUNING_FILE's.
func (o *Options) stackConfig() ccl.Config {
	cfg := o.env.cfg
	if o.TuningFile != "" {
		cfg.TuningFile = o.TuningFile
	}
	return cfg
}

// envNotes are the header's notes on the variables in force and the ones
// a flag overrode.
func (o *Options) envNotes() []string {
	over := o.overriddenBy()
	keys := make([]string, 0, len(o.env.set))
	for k := range o.env.set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var notes []string
	for _, k := range keys {
		v := o.env.set[k]
		if flag, ok := over[k]; ok {
			notes = append(notes, fmt.Sprintf("%s=%s in the environment is overridden by %s (flags beat the environment)", k, v, flag))
			continue
		}
		switch k {
		case ccl.EnvTuningFile, ccl.EnvModelFile:
			notes = append(notes, fmt.Sprintf("%s=%s from the environment steers the stack's own choices (auto)", k, v))
		default:
			notes = append(notes, fmt.Sprintf("%s=%s from the environment applies to every configuration (a flag would override it)", k, v))
		}
	}
	return notes
}

// recordEnv is the environment a record carries: the recorded
// variables in force, without those a flag overrode; an embedded run's
// --tuning-file is recorded as the variable it stands for.
func (o *Options) recordEnv() map[string]string {
	env := results.FilterEnv(os.Environ())
	for k := range o.overriddenBy() {
		delete(env, k)
	}
	if o.TuningFile != "" && o.Backend == BackendEmbedded {
		if env == nil {
			env = map[string]string{}
		}
		env[ccl.EnvTuningFile] = o.TuningFile
	}
	if len(env) == 0 {
		return nil
	}
	return env
}

// resolve fills the parts of rc that no flag set from the environment:
// the configuration that actually runs.
func (o *Options) resolve(rc RunConfig) RunConfig {
	over, env := o.overriddenBy(), o.env.cfg
	if _, ok := over[ccl.EnvProto]; !ok && !env.Proto.IsAuto() {
		rc.Proto = env.Proto
	}
	if _, ok := over[ccl.EnvAlgo]; !ok && !env.Algo.IsAuto() {
		rc.Algo = env.Algo
	}
	if _, ok := over[ccl.EnvNChannels]; !ok && env.NChannels > 0 {
		rc.NChannels = env.NChannels
	}
	if _, ok := over[ccl.EnvBuffSize]; !ok && env.BuffSize > 0 {
		rc.BuffSize = int64(env.BuffSize)
	}
	if rc.MaxNChannels == 0 && env.MaxNChannels > 0 {
		rc.MaxNChannels = max(env.MaxNChannels, rc.NChannels)
	}
	if _, ok := over[ccl.EnvTimeout]; !ok && env.Timeout != 0 {
		rc.Timeout = env.Timeout
	}
	if _, ok := over[ccl.EnvRanksPerHost]; !ok && env.RanksPerHost > 0 {
		rc.RanksPerHost = env.RanksPerHost
	}
	return rc
}
