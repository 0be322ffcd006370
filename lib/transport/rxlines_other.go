//go:build !unix

package transport

import (
	"time"

	"github.com/gccl/gccl/lib/proto"
)

// Where reads that never block are not wired up, the proxy alone reads
// (the generic loop of runRecv).

type rxState struct{}

var holdLease time.Duration

const canPollLines = false

func (px *proxy) startLines(*proto.SendEnd) bool { return false }
func (px *proxy) runRecvLines() error            { return nil }
func (px *proxy) poll() bool                     { return false }
func (px *proxy) hold(bool)                      {}
func (px *proxy) awaitPolls()                    {}
