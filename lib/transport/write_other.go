//go:build !unix

package transport

import "syscall"

// writeNow writes nothing where non-blocking writes are not wired up: the
// proxy sends every post.
func writeNow(raw syscall.RawConn, b []byte) int { return 0 }
