package launch

import (
	"os"
	"os/signal"
	"syscall"
)

func signalIgnore(s syscall.Signal) { signal.Ignore(s) }

// waitSignal blocks until s arrives.
func waitSignal(s syscall.Signal) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, s)
	<-c
}
