// Package archcheck holds no code: its test keeps docs/ARCHITECTURE.md's
// table of imports between gccl's packages true, and the layers' rules
// (no diagonal edges) kept.
package archcheck
