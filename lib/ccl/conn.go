// conn.go: the connections between ranks: their kinds and keys, made on
// first use and shared by both ends, and a rank's ring and tree links
// built from them.

package ccl

import (
	"fmt"

	"github.com/gccl/gccl/lib/prims"
	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/transport"
)

// connKind separates the connections two ranks may have on one channel:
// each pattern gets its own FIFOs, as NCCL gives rings, trees and p2p their
// own connectors.
type connKind uint8

const (
	connRing     connKind = iota
	connTreeUp            // child -> parent: the reduce phase
	connTreeDown          // parent -> child: the broadcast phase
	connP2P
)

var connKindNames = [...]string{"ring", "tree up", "tree down", "p2p"}

// connKindTags name the kinds in shared-memory segment names.
var connKindTags = [...]string{"ring", "tup", "tdn", "p2p"}

type connKey struct {
	from, to, ch int
	kind         connKind
	proto        proto.Protocol
	buff         int // FIFO bytes: a tuning rule may ask for another size
}

// ends are both ends of one protocol of one connection. The send end is
// owned by channel ch of rank from, the receive end by channel ch of rank to.
type ends struct {
	send *proto.SendEnd
	recv *proto.RecvEnd
}

// connect returns the ends of a connection, creating it on first use. Both
// ranks' plan builders call it; the mutex makes the creation visible to both.
func (w *world) connect(from, to, ch int, kind connKind, p proto.Protocol, buff int) (*ends, error) {
	k := connKey{from, to, ch, kind, p, buff}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.conns[k]; ok {
		return e, nil
	}
	sender, receiver := w.comms[from], w.comms[to]
	sides := transport.BothSides
	switch {
	case receiver == nil:
		sides = transport.SendOnly
	case sender == nil:
		sides = transport.RecvOnly
	}
	if err := w.abort.Err(); err != nil {
		return nil, err // no new segments once the job failed
	}
	c, err := transport.Connect(w.transports, transport.Request{
		From: w.peers[from], To: w.peers[to], Channel: ch, Proto: p,
		BuffSize: buff, Options: w.set.fifo, Kind: connKindTags[kind], Sides: sides,
	})
	if err != nil {
		if aerr := w.abort.Err(); aerr != nil {
			return nil, aerr // the cause, not what it did to this connection
		}
		return nil, err
	}
	if c.Close != nil {
		w.closers = append(w.closers, c.Close)
	}
	desc := fmt.Sprintf("%s -> %s, channel %d (%s)", w.job.rankName(from), w.job.rankName(to), ch, connKindNames[kind])
	e := &ends{}
	// A FIFO end's far waiter is the peer rank's channel: in this process,
	// or behind a bell in another process on this host; a network
	// transport has set its proxy there itself.
	proxySend := c.SendSide != nil && c.SendSide.RecvWaiter != nil
	proxyRecv := c.RecvSide != nil && c.RecvSide.SendWaiter != nil
	if sender != nil {
		sc := sender.channels[ch]
		c.SendSide.SendWaiter = sc.waiter
		switch {
		case proxySend: // the transport's proxy
		case receiver != nil:
			c.SendSide.RecvWaiter, c.SendSide.RecvKick = receiver.channels[ch].waiter, receiver.channels[ch].kick
		default:
			// The receiver's goroutine is in another process: ring its bell.
			c.SendSide.RecvWaiter, c.SendSide.RecvKick = w.job.remoteWaiter(to, ch), w.job.remoteKick(to, ch)
		}
		c.SendSide.From, c.SendSide.To = from, to
		e.send, _ = proto.NewEnds(c.SendSide, desc)
	}
	if receiver != nil {
		rc := receiver.channels[ch]
		c.RecvSide.RecvWaiter = rc.waiter
		switch {
		case proxyRecv: // the transport's proxy
		case sender != nil:
			c.RecvSide.SendWaiter, c.RecvSide.SendKick = sender.channels[ch].waiter, sender.channels[ch].kick
		default:
			c.RecvSide.SendWaiter, c.RecvSide.SendKick = w.job.remoteWaiter(from, ch), w.job.remoteKick(from, ch)
		}
		c.RecvSide.From, c.RecvSide.To = from, to
		_, e.recv = proto.NewEnds(c.RecvSide, desc)
	}
	if c.Start != nil {
		c.Start()
	}
	w.conns[k] = e
	return e, nil
}

// connect returns a connection's ends from this rank's cache, asking the
// world (and its lock) only the first time.
func (c *Comm) connect(from, to, ch int, kind connKind, p proto.Protocol, buff int) (*ends, error) {
	k := connKey{from, to, ch, kind, p, buff}
	if e, ok := c.ends[k]; ok {
		return e, nil
	}
	e, err := c.w.connect(from, to, ch, kind, p, buff)
	if err != nil {
		return nil, err
	}
	if c.ends == nil {
		c.ends = map[connKey]*ends{}
	}
	c.ends[k] = e
	return e, nil
}

// ringConn holds a channel's ring ends: to the next rank and from the previous one.
type ringConn struct {
	send *proto.SendEnd
	recv *proto.RecvEnd
}

// ringConn returns channel ch's ring ends for protocol p with FIFOs of
// buff bytes, connecting them on first use. Those of the communicator's
// own buffer size are kept at hand; other sizes (asked by a tuning rule)
// go through the connection map.
//
// chain asks for the ends of the chain that broadcast and reduce follow:
// the same direction (w.chain) on every channel, where the rings of odd
// channels run the reverse. A rank starts an operation once it finished
// the previous one on every channel (waitPrevious); on reversed chains the
// root's neighbour is the last rank of the odd channels' chain, so no rank
// started the next broadcast before the previous one had crossed the whole
// chain, and back-to-back broadcasts lost their pipelining along the chain
// (8 ranks on the 16-core Xeon, 64-256 KiB: 2 channels took twice one's
// time or more; docs/PERFORMANCE.md, "Tree against ring";
// docs/log/performance-2026-11.md 12w).
func (c *Comm) ringConn(ch int, p proto.Protocol, buff int, chain bool) (*ringConn, error) {
	std := buff == c.w.set.buff[p]
	ring, kept := c.w.rings[ch], &c.ringConns[ch][p]
	if chain {
		ring, kept = c.w.chain, &c.chainConns[ch][p]
	}
	if rc := *kept; rc != nil && std {
		return rc, nil
	}
	out, err := c.connect(c.rank, ring.Next(c.rank), ch, connRing, p, buff)
	if err != nil {
		return nil, err
	}
	in, err := c.connect(ring.Prev(c.rank), c.rank, ch, connRing, p, buff)
	if err != nil {
		return nil, err
	}
	rc := &ringConn{send: out.send, recv: in.recv}
	if std {
		*kept = rc
	}
	return rc, nil
}

// treeConn returns channel ch's ends in its tree for protocol p,
// connecting them on first use. Even channels use tree 0, odd channels
// tree 1, so half the channels use each tree of the double binary tree.
func (c *Comm) treeConn(ch int, p proto.Protocol, buff int) (*prims.TreeEnds, error) {
	std := buff == c.w.set.buff[p]
	if t := c.treeConns[ch][p]; t != nil && std {
		return t, nil
	}
	node := c.w.trees[ch%2][c.rank]
	t := &prims.TreeEnds{}
	if node.Parent >= 0 {
		up, err := c.connect(c.rank, node.Parent, ch, connTreeUp, p, buff)
		if err != nil {
			return nil, err
		}
		down, err := c.connect(node.Parent, c.rank, ch, connTreeDown, p, buff)
		if err != nil {
			return nil, err
		}
		t.ToParent, t.FromParent = up.send, down.recv
	}
	for _, child := range node.Children {
		if child < 0 {
			continue
		}
		up, err := c.connect(child, c.rank, ch, connTreeUp, p, buff)
		if err != nil {
			return nil, err
		}
		down, err := c.connect(c.rank, child, ch, connTreeDown, p, buff)
		if err != nil {
			return nil, err
		}
		t.FromChildren = append(t.FromChildren, up.recv)
		t.ToChildren = append(t.ToChildren, down.send)
	}
	if std {
		c.treeConns[ch][p] = t
	}
	return t, nil
}
