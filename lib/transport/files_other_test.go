//go:build !unix

package transport

// raiseFileLimit is the open files this process may hold, as far as known.
func raiseFileLimit() int { return 1024 }
