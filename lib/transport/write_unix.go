//go:build unix

package transport

import "syscall"

// writeNow writes what of b the socket takes now, never waiting for room;
// it returns how many bytes it wrote. An error is left for the proxy's
// blocking write to meet and report.
func writeNow(raw syscall.RawConn, b []byte) int {
	n := 0
	_ = raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, err := rawWrite(int(fd), b[n:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || m <= 0 {
				break
			}
			n += m
		}
		return true // done either way: never wait in the poller
	})
	return n
}
