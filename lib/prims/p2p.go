package prims

import (
	"fmt"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/steptrace"
)

// Xfer is one point-to-point send or receive on one channel: Buf moves
// through one FIFO end in steps of at most Chunk bytes (one step each). A
// transfer of zero bytes still moves one empty step, so a size mismatch with
// the peer is detected rather than silently ignored.
type Xfer struct {
	Send  *proto.SendEnd // exactly one of Send and Recv is set
	Recv  *proto.RecvEnd
	Buf   []byte
	Chunk int

	done, steps, step int // progress, owned by the running goroutine
	shown             int // chunks shown to a network proxy (expectAhead)
}

// fifo is the FIFO the transfer moves through.
func (x *Xfer) fifo() *proto.Fifo {
	if x.Send != nil {
		return x.Send.F
	}
	return x.Recv.F
}

func (x *Xfer) proto() proto.Protocol { return x.fifo().Proto }

func (x *Xfer) init() {
	x.steps = max(1, (len(x.Buf)+x.Chunk-1)/x.Chunk)
	x.step, x.done, x.shown = 0, 0, 0
}

// expectAhead shows a network proxy where the receive's next chunks go, a
// FIFO's depth ahead: the proxy reads frames as they come, ahead of this
// goroutine, and lands each shown one in Buf instead of a slot.
func (x *Xfer) expectAhead() {
	for x.shown = max(x.shown, x.step); x.shown < min(x.steps, x.step+proto.Steps); x.shown++ {
		lo := x.shown * x.Chunk
		x.Recv.SimpleExpectAhead(x.shown-x.step, x.Buf[lo:min(lo+x.Chunk, len(x.Buf))])
	}
}

func (x *Xfer) finished() bool { return x.step >= x.steps }

func (x *Xfer) next() []byte {
	n := min(x.Chunk, len(x.Buf)-x.done)
	return x.Buf[x.done : x.done+n]
}

// ready reports whether the next step can run without waiting.
func (x *Xfer) ready() bool {
	if x.Send != nil {
		return x.Send.CanSend(1)
	}
	return x.Recv.CanRecv(1, len(x.next()))
}

// advance runs the next step; ready() was true, so it does not wait.
func (x *Xfer) advance() error {
	data := x.next()
	var err error
	switch p := x.proto(); {
	case x.Send != nil && p == proto.Simple:
		var buf []byte
		if buf, err = x.Send.SimpleAcquire(1); err == nil {
			if x.Send.F.Direct() && len(data) >= x.Send.F.RefMinBytes() {
				// The receiver (or the sending proxy of a network
				// connection) reads the step from the caller's buffer;
				// RunP2P drains before it returns.
				x.Send.SimplePostRef(1, data)
			} else {
				copy(buf, data)
				x.Send.SimplePost(1, len(data))
			}
		}
	case x.Send != nil && p == proto.LL:
		err = x.Send.LLSend(data)
	case x.Send != nil:
		err = x.Send.LL128Send(data)
	case p == proto.Simple:
		var buf []byte
		if buf, err = x.Recv.SimpleWaitInto(1, data); err == nil {
			CopyUnlessSame(data, buf) // unless a network proxy put it there
			x.Recv.SimpleRelease(1)
		}
	case p == proto.LL:
		err = x.Recv.LLRecv(data)
	default:
		err = x.Recv.LL128Recv(data)
	}
	x.done += len(data)
	x.step++
	return err
}

// RunP2P progresses every queue of transfers at once, each queue in order,
// never blocking on one transfer while another could move: a channel's sends
// to one peer and receives from another complete together even when each is
// larger than a FIFO. It parks on w when nothing can move.
func RunP2P(w *proto.Waiter, queues ...[]*Xfer) error {
	heads := make([]int, len(queues))
	for _, q := range queues {
		for _, x := range q {
			if x.Chunk <= 0 {
				return fmt.Errorf("prims: p2p chunk of %d bytes", x.Chunk)
			}
			x.init()
			if x.Send != nil {
				x.Send.AlignStep(1)
			}
		}
	}
	// The wait yields no longer than any of its FIFOs would on its own
	// (0 where a network proxy serves one).
	yieldFor := w.YieldFor
	for _, q := range queues {
		for _, x := range q {
			yieldFor = min(yieldFor, x.fifo().YieldFor(w))
		}
	}
	current := func(i int) *Xfer {
		for heads[i] < len(queues[i]) && queues[i][heads[i]].finished() {
			heads[i]++
		}
		if heads[i] == len(queues[i]) {
			return nil
		}
		return queues[i][heads[i]]
	}
	anyReady := func() bool {
		for i := range queues {
			if x := current(i); x != nil && x.ready() {
				return true
			}
		}
		return false
	}
	for {
		pending, moved := false, false
		for i := range queues {
			for x := current(i); x != nil; x = current(i) {
				pending = true
				if x.Recv != nil && x.Recv.F.Proxied() && x.proto() == proto.Simple {
					x.expectAhead() // a network proxy may land them there
				}
				if !x.ready() {
					break
				}
				if err := x.run(w.Trace); err != nil {
					return err
				}
				moved = true
			}
		}
		if !pending {
			return drainSends(queues)
		}
		if !moved {
			kick := func() {
				for i := range queues {
					if x := current(i); x != nil {
						if x.Send != nil && x.Send.F.RecvKick != nil {
							x.Send.F.RecvKick()
						} else if x.Recv != nil && x.Recv.F.SendKick != nil {
							x.Recv.F.SendKick()
						}
					}
				}
			}
			// Receives whose network socket this goroutine polls (CanRecv)
			// are held until it parks: their proxies leave the sockets to
			// it meanwhile (proto.Fifo.Hold).
			holding := false
			for i := range queues {
				if x := current(i); x != nil && x.Recv != nil && x.Recv.Hold(len(x.next())) {
					holding = true
				}
			}
			what := func() string { return describe(queues, current) }
			if w.Trace != nil {
				w.For(waitingFor(queues, current))
			}
			if !holding {
				if err := w.WaitKickYield(anyReady, kick, what, yieldFor); err != nil {
					return err
				}
				continue
			}
			arrived := func() bool {
				for i := range queues {
					if x := current(i); x != nil && (x.Send != nil && x.Send.CanSend(1) || x.Recv != nil && x.Recv.Arrived(1, len(x.next()))) {
						return true
					}
				}
				return false
			}
			unhold := func() {
				for i := range queues {
					if x := current(i); x != nil && x.Recv != nil && x.Recv.F.Hold != nil {
						x.Recv.Unhold()
					}
				}
			}
			if err := w.WaitKickPark(anyReady, arrived, unhold, kick, what, yieldFor); err != nil {
				return err
			}
		}
	}
}

// drainSends waits until every send end that lent the caller's memory has
// had it read: the buffers are the caller's again when RunP2P returns.
func drainSends(queues [][]*Xfer) error {
	for _, q := range queues {
		for _, x := range q {
			if x.Send != nil {
				if err := x.Send.Drain(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// run runs the next step, recorded in tr when set.
func (x *Xfer) run(tr *steptrace.Buf) error {
	if tr == nil {
		return x.advance()
	}
	n := len(x.next())
	err := x.advance()
	name, to, from := "recv", -1, -1
	if x.Send != nil {
		name, to = "send", x.Send.Peer()
	} else {
		from = x.Recv.Peer()
	}
	tr.Step(name, x.proto().String(), to, from, int64(n))
	return err
}

// waitingFor names what a stalled RunP2P waits for: the one transfer it
// waits on, or several (OnOther, no peer).
func waitingFor(queues [][]*Xfer, current func(int) *Xfer) (steptrace.On, int) {
	var only *Xfer
	for i := range queues {
		if x := current(i); x != nil {
			if only != nil {
				return steptrace.OnOther, -1
			}
			only = x
		}
	}
	switch {
	case only == nil:
		return steptrace.OnOther, -1
	case only.Send != nil:
		return steptrace.OnHead, only.Send.Peer()
	case only.proto() == proto.Simple:
		return steptrace.OnTail, only.Recv.Peer()
	default:
		return steptrace.OnFlag, only.Recv.Peer()
	}
}

func describe(queues [][]*Xfer, current func(int) *Xfer) string {
	for i := range queues {
		if x := current(i); x != nil {
			if x.Send != nil {
				return fmt.Sprintf("%s credits (p2p %s step %d)", x.Send.Desc, x.proto(), x.Send.Step)
			}
			return fmt.Sprintf("%s data (p2p %s step %d)", x.Recv.Desc, x.proto(), x.Recv.Step)
		}
	}
	return "p2p progress"
}
