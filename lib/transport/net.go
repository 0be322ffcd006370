package transport

import (
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/gccl/gccl/lib/proto"
)

// Net connects ranks on different hosts over TCP with NCCL's proxy design:
// each end has a FIFO in its own memory that its rank uses exactly as in
// one process, and a proxy goroutine bridges the two over a socket. On the
// sending host the proxy reads each published slice from the local FIFO
// (as the receiver would), returns its credit and writes one frame; on the
// receiving host the proxy reads the frame and publishes it into the local
// FIFO (as the sender would), at the same step.
//
// LL and LL128 lines are rebuilt by the receiving proxy, not carried: the
// wire holds payload only (half of LL's bytes), and the receiving FIFO's
// flags are then written with the stores the protocol's ordering relies
// on, which a socket's copy into memory does not promise.
//
// A connection is opened by the sender: it dials the receiving process's
// listener (one per process, NetListener), both ends prove they hold the
// job's token without sending it, and the sender names the connection
// (see dialNet); the listener refuses and logs a wrong token and goes on.
type Net struct {
	Listener *NetListener
	// Addr is the listener address of the process that holds rank.
	Addr  func(rank int) (string, error)
	Token string
	// Timeout bounds dialling and waiting for the sender's dial.
	Timeout time.Duration
	// Stop reports that the job aborted: waits for a peer end early.
	Stop func() bool
	// Abort is the job's abort signal: the proxies stop with it, and a
	// proxy whose socket fails triggers it with an error naming the peer.
	Abort *proto.Abort
	// Spin is how long an idle proxy polls (its FIFO, or its socket
	// without blocking) before it parks: zero parks at once. Spinning
	// saves a thread wake-up per hop (NCCL's proxies poll), and is only
	// for hosts whose processors outnumber the goroutines that spin.
	Spin time.Duration
	// Socks is the sockets per connection (GCCL_NSOCKS; 0 or 1: one): a
	// Simple slice of at least Socks x MinSockPart bytes is cut into that
	// many parts, part j on socket j. Threads is the goroutines per end
	// that move them (GCCL_NSOCKS_THREADS; 0 or 1: the proxy alone): socket
	// j belongs to goroutine j % Threads, goroutine 0 being the proxy.
	// Both ends of a job must agree on Socks.
	Socks, Threads int
}

// MaxSocks bounds Net.Socks.
const MaxSocks = 16

func (Net) Name() string { return "net" }

func (Net) CanConnect(from, to Peer) bool { return from.Host != to.Host }

// NetKey names a connection's protocol on the wire (as Shm names segments).
func NetKey(req Request) string {
	return fmt.Sprintf("%d-%d-c%d-%s-%s-%d", req.From.Rank, req.To.Rank, req.Channel, req.Kind, req.Proto, req.BuffSize)
}

func (t Net) Connect(req Request) (*Conn, error) {
	if req.Sides == BothSides {
		return nil, fmt.Errorf("net: ranks %d and %d are in one process: use the in-process transport", req.From.Rank, req.To.Rank)
	}
	opt := req.Options
	// The sending rank may post by reference (Direct): its proxy, in the
	// same process, writes those bytes to the socket straight from the
	// rank's buffer (two copies fewer per byte). The receiving FIFO's
	// sender is its proxy, which never does.
	opt.Proxied = true
	opt.Direct = opt.Direct && req.Sides == SendOnly
	f, err := proto.NewFifo(req.Proto, req.BuffSize, opt)
	if err != nil {
		return nil, err
	}
	key := NetKey(req)
	socks, threads := max(t.Socks, 1), min(max(t.Threads, 1), max(t.Socks, 1))
	px := &proxy{f: f, step: opt.StartStep, stop: proto.NewAbort(), abort: t.Abort, threads: threads,
		buf:  make([]byte, frameBufBytes(req.Proto, req.BuffSize)),
		desc: fmt.Sprintf("rank %d -> rank %d, channel %d (%s, %s)", req.From.Rank, req.To.Rank, req.Channel, req.Kind, req.Proto)}
	px.waiter = proto.NewWaiter(px.stop, 0) // idle between operations: no timeout
	// A proxy parks soon: its peer's data come through the network poller,
	// which a goroutine yielding in a loop keeps the scheduler from
	// polling (an 8 B round trip through four proxies on loopback, see
	// BenchmarkNetPingPong, was slow with yield phases everywhere;
	// docs/log/performance-2026-11.md 13).
	px.waiter.YieldFor = 0
	px.spin = t.Spin
	if t.Spin > 0 {
		px.waiter.SetSpin(proto.SpinPlan{For: t.Spin, NoBackOff: true, KeepProc: true})
	}
	if req.Sides == SendOnly {
		addr, err := t.Addr(req.To.Rank)
		if err != nil {
			return nil, err
		}
		for j := 0; j < socks; j++ {
			c, err := dialNet(addr, t.Token, sockKey(key, j, socks), t.Timeout, t.Stop)
			if err != nil {
				for _, c := range px.conns {
					c.Close()
				}
				return nil, fmt.Errorf("dialling rank %d (host %q) at %s: %w", req.To.Rank, req.To.Host, addr, err)
			}
			px.conns = append(px.conns, c)
		}
		px.conn = px.conns[0]
		px.peer = fmt.Sprintf("rank %d (host %q, %s)", req.To.Rank, req.To.Host, addr)
		f.RecvWaiter = px.waiter // a post wakes the proxy
		px.tx.r = proto.RecvEnd{F: f, Step: px.step, Desc: px.desc + " (proxy)"}
		if sc, ok := px.conn.(syscall.Conn); ok {
			if raw, err := sc.SyscallConn(); err == nil {
				px.raw = raw
				f.Flush = px.flush
			}
		}
		return &Conn{SendSide: f, Start: px.startSend, Close: px.close, proxy: px}, nil
	}
	// The sender dials when its rank first needs the connection; waiting
	// for it here could deadlock two processes that each wait for the
	// other's dial. The proxy waits instead, and the rank's receive waits
	// (with their timeout) see nothing until it is there.
	px.peer = fmt.Sprintf("rank %d (host %q)", req.From.Rank, req.From.Host)
	px.await = func() ([]net.Conn, error) {
		stop := func() bool { return px.stop.Aborted() || (t.Stop != nil && t.Stop()) }
		var conns []net.Conn
		for j := 0; j < socks; j++ {
			c, err := t.Listener.Await(sockKey(key, j, socks), t.Timeout, stop)
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return nil, fmt.Errorf("rank %d never connected: %w", req.From.Rank, err)
			}
			conns = append(conns, c)
		}
		return conns, nil
	}
	f.SendWaiter = px.waiter // a released slot wakes the proxy
	if req.Proto != proto.Simple && canPollLines {
		f.Poll = px.poll // a waiting rank reads small frames itself
		f.Hold = px.hold
	}
	return &Conn{RecvSide: f, Start: px.startRecv, Close: px.close, proxy: px}, nil
}

// sockKey names socket j of k of the connection key: the key alone for a
// single socket, so ends that agree on one socket keep the old names.
func sockKey(key string, j, k int) string {
	if k <= 1 {
		return key
	}
	return fmt.Sprintf("%s/s%d-of-%d", key, j, k)
}
