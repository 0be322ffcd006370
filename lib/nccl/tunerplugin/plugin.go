// Package tunerplugin builds gccl's NCCL tuner plugin (csrc/gccl_tuner.c):
// a shared object NCCL loads through NCCL_TUNER_PLUGIN that applies a
// tuning table's rules (NCCL_TUNER_CONFIG_FILE, the CSV of
// `tune table --nccl-csv`) and, unlike NCCL's example plugin, keeps
// NCCL's channel count wherever a rule does not set one.
package tunerplugin

import (
	_ "embed"
	"os"

	"github.com/gccl/gccl/lib/nccl/cbuild"
)

//go:embed csrc/gccl_tuner.c
var source []byte

// FileName is the plugin's conventional file name.
const FileName = "libnccl-tuner-gccl.so"

var object = cbuild.Object{
	What: "the NCCL tuner plugin", SrcName: "gccl_tuner.c", File: FileName, Src: source,
	CacheHint: "build it with `tune plugin --output PATH` and set NCCL_TUNER_PLUGIN",
}

// Source returns the plugin's C source.
func Source() []byte { return source }

// FindCompiler returns the C compiler to build with: cc (a name or path,
// as $CC says one) when given, else cc, else gcc.
func FindCompiler(cc string) (string, error) { return cbuild.FindCompiler(cc, object.What) }

// CompilerFromEnv is FindCompiler($CC), make's and cgo's convention.
func CompilerFromEnv() (string, error) { return FindCompiler(os.Getenv("CC")) }

// CompileFromEnv is CompileWith($CC).
func CompileFromEnv() ([]byte, error) { return CompileWith(os.Getenv("CC")) }

// CompileWith builds the plugin with the compiler FindCompiler(cc) finds
// and returns the shared object's bytes.
func CompileWith(cc string) ([]byte, error) { return object.Compile(cc) }

// Build compiles the plugin with cc (as CompileWith) into out (a .so
// path, in a directory that exists), replacing it.
func Build(out, cc string) error { return object.Build(out, cc) }

// Cached returns the plugin in the user's cache directory, building it
// there first (with cc, as CompileWith) if it is missing or older than
// this binary's source.
func Cached(cc string) (string, error) { return object.Cached(cc) }
