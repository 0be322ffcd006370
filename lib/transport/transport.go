// Package transport sets up the memory of connections between ranks. A
// transport hands out, for one protocol of one directed connection, the FIFO
// the sender writes and the FIFO the receiver reads: the same memory in one
// process, a shared mapping across processes, or two FIFOs bridged by proxy
// goroutines across hosts. Protocols and algorithms see only proto.Fifo, so a
// new transport plugs in here without touching them.
package transport

import (
	"fmt"

	"github.com/gccl/gccl/lib/proto"
)

// Peer describes a rank for the purpose of choosing a transport.
type Peer struct {
	Rank int
	Host string // host identity (hostname plus boot id across processes)
	Pid  int    // process id; ranks of one process share memory
}

// Request asks for one protocol of the directed connection From -> To on
// one channel.
type Request struct {
	From, To Peer
	Channel  int
	Proto    proto.Protocol
	BuffSize int
	Options  proto.FifoOptions
	// Kind tells apart the connections two ranks have on one channel
	// ("ring", "treeup", ...): each has its own memory.
	Kind string
	// Sides says which ends this process holds: both ends (ranks of one
	// process), or one when the other rank lives in another process,
	// which makes the same request for its own end.
	Sides Sides
}

// Sides are the ends of a connection a process holds.
type Sides uint8

const (
	BothSides Sides = iota
	SendOnly
	RecvOnly
)

// Conn is one protocol of a directed connection: SendSide is the FIFO the
// sender writes, RecvSide the one the receiver reads (the same FIFO when the
// transport shares memory; nil for an end another process holds).
type Conn struct {
	SendSide, RecvSide *proto.Fifo
	Transport          string
	// Close releases the connection's memory (nil: the garbage collector
	// does). Called once both ends' users are gone.
	Close func()
	// Start, when set, starts the transport's own goroutines (network
	// proxies) once the caller has set the FIFO's waiters and kicks. A
	// transport that sets a FIFO's waiter itself (the proxy's, for the end
	// it serves) keeps it: the caller fills only those left nil.
	Start func()

	proxy *proxy // the network transport's proxy (tests)
}

// Transport is one way of connecting two ranks.
type Transport interface {
	Name() string
	// CanConnect reports whether this transport can connect from to to.
	CanConnect(from, to Peer) bool
	// Connect allocates the connection's memory.
	Connect(req Request) (*Conn, error)
}

// Connect asks each transport in order; the first whose CanConnect says yes
// serves the request. When none does, the error names both ranks.
func Connect(ts []Transport, req Request) (*Conn, error) {
	for _, t := range ts {
		if t.CanConnect(req.From, req.To) {
			c, err := t.Connect(req)
			if err != nil {
				return nil, fmt.Errorf("transport %s: connecting rank %d -> rank %d channel %d (%s): %w",
					t.Name(), req.From.Rank, req.To.Rank, req.Channel, req.Proto, err)
			}
			c.Transport = t.Name()
			return c, nil
		}
	}
	return nil, fmt.Errorf("no transport can connect rank %d (host %q pid %d) to rank %d (host %q pid %d)",
		req.From.Rank, req.From.Host, req.From.Pid, req.To.Rank, req.To.Host, req.To.Pid)
}
