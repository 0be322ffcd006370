//go:build linux && (amd64 || arm64)

package nccl

import (
	"os"
	"testing"
)

// SetParam writes the C environment, where NCCL reads it, and leaves Go's
// alone; UnsetParam and PutParam undo it.
func TestParamsLiveInTheCEnvironment(t *testing.T) {
	const k = "GCCL_TEST_NCCL_PARAM"
	t.Setenv(k, "user") // Go's view; the C environment starts with it too after Setenv
	if err := SetParam(k, "forced"); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := LookupParam(k); err != nil || !ok || v != "forced" {
		t.Fatalf("C environment: %q %v %v, want forced", v, ok, err)
	}
	if v := os.Getenv(k); v != "user" {
		t.Fatalf("Go's environment: %q, want the user's value unchanged", v)
	}
	if err := UnsetParam(k); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := LookupParam(k); err != nil || ok {
		t.Fatalf("after UnsetParam: %q %v %v, want unset", v, ok, err)
	}
	v, set := os.LookupEnv(k)
	if err := PutParam(k, v, set); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := LookupParam(k); !ok || got != "user" {
		t.Fatalf("after PutParam of the user's value: %q %v", got, ok)
	}
	if err := SetParam("BAD=NAME", "x"); err == nil {
		t.Error("a name with '=' was accepted")
	}
}
