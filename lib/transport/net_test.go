package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/lib/proto"
)

// netPairSpin is the proxies' Spin in netPair, netPairSocks and
// netPairThreads their sockets and goroutines (tests set them per run; not
// parallel).
var (
	netPairSpin                  time.Duration
	netPairSocks, netPairThreads int
	netPairHoldRecv              chan struct{} // see proxy.holdRecv
)

// netPair opens one connection of protocol p over loopback TCP: the
// sender's FIFO and the receiver's, each bridged by its proxy, both ends in
// this process (as two hosts would hold them).
func netPair(t testing.TB, p proto.Protocol, size int, abort *proto.Abort) (*proto.SendEnd, *proto.RecvEnd, *Conn, *Conn) {
	t.Helper()
	const token = "job-token"
	l, err := ListenNet("127.0.0.1:0", token, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	tr := Net{Listener: l, Addr: func(int) (string, error) { return l.Addr(), nil }, Token: token, Timeout: 5 * time.Second, Abort: abort, Spin: netPairSpin,
		Socks: netPairSocks, Threads: netPairThreads}
	req := Request{From: Peer{Rank: 0, Host: "a", Pid: 1}, To: Peer{Rank: 1, Host: "b", Pid: 2}, Proto: p, BuffSize: size, Kind: "ring"}
	req.Sides = SendOnly
	sc, err := Connect([]Transport{InProc{}, Shm{}, tr}, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Sides = RecvOnly
	rc, err := Connect([]Transport{InProc{}, Shm{}, tr}, req)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Transport != "net" || rc.Transport != "net" {
		t.Fatalf("transports %q, %q: want net", sc.Transport, rc.Transport)
	}
	sc.SendSide.SendWaiter = proto.NewWaiter(abort, 5*time.Second)
	rc.RecvSide.RecvWaiter = proto.NewWaiter(abort, 5*time.Second)
	rc.proxy.holdRecv = netPairHoldRecv
	sc.Start()
	rc.Start()
	t.Cleanup(func() { sc.Close(); rc.Close() })
	s, _ := proto.NewEnds(sc.SendSide, "test send")
	_, r := proto.NewEnds(rc.RecvSide, "test recv")
	return s, r, sc, rc
}

// TestNetMovesEveryProtocol moves many steps of every protocol through
// two proxies and a socket: empty steps, partial and full ones, Simple
// slices of 1 and 2 steps with the steps aligned, several FIFOs' worth so
// credits wrap; every payload must arrive bit for bit, in order.
// Each runs with the sender's small posts sent inline by the posting
// goroutine (the default) and with every post left to the proxy.
func TestNetMovesEveryProtocol(t *testing.T) {
	for _, spin := range []time.Duration{0, 300 * time.Microsecond} {
		for _, inline := range []bool{true, false} {
			t.Run(fmt.Sprintf("spin=%v/inline=%v", spin, inline), func(t *testing.T) {
				netPairSpin = spin
				defer func() { netPairSpin = 0 }()
				testNetMovesEveryProtocol(t, inline)
			})
		}
	}
}

func testNetMovesEveryProtocol(t *testing.T, inline bool) {
	for _, c := range []struct {
		p    proto.Protocol
		size int
	}{{proto.LL, 8 * 8 * proto.LLLineBytes}, {proto.LL128, 8 * 16 * proto.LL128LineBytes}, {proto.Simple, 8 * 1024}} {
		t.Run(c.p.String(), func(t *testing.T) {
			abort := proto.NewAbort()
			s, r, sc, _ := netPair(t, c.p, c.size, abort)
			if !inline {
				s.F.Flush = nil
			}
			step := s.F.StepData()
			type op struct{ steps, n int }
			var ops []op
			for i := 0; i < 200; i++ {
				k := 1
				if c.p == proto.Simple && i%3 == 0 {
					k = 2
				}
				n := []int{0, 1, step / 2, step, 7}[i%5]
				if c.p == proto.Simple {
					n = min(n*k, k*s.F.StepBytes)
				}
				ops = append(ops, op{k, n})
			}
			errc := make(chan error, 1)
			go func() {
				for i, o := range ops {
					data := bytes.Repeat([]byte{byte(i)}, o.n)
					var err error
					switch c.p {
					case proto.Simple:
						s.AlignStep(o.steps)
						var buf []byte
						if buf, err = s.SimpleAcquire(o.steps); err == nil {
							copy(buf, data)
							s.SimplePost(o.steps, o.n)
						}
					case proto.LL:
						err = s.LLSend(data)
					default:
						err = s.LL128Send(data)
					}
					if err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			for i, o := range ops {
				want := bytes.Repeat([]byte{byte(i)}, o.n)
				got := make([]byte, o.n)
				var err error
				switch c.p {
				case proto.Simple:
					r.AlignStep(o.steps)
					var b []byte
					if b, err = r.SimpleWait(o.steps, o.n); err == nil {
						copy(got, b)
						r.SimpleRelease(o.steps)
					}
				case proto.LL:
					err = r.LLRecv(got)
				default:
					err = r.LL128Recv(got)
				}
				if err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("op %d (%d steps, %d bytes): payload differs", i, o.steps, o.n)
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if abort.Aborted() {
				t.Fatalf("aborted: %v", abort.Err())
			}
			// Every post is at most a step, below inlineMax: inline, the
			// sender wrote most of them itself (the proxy takes those it
			// posts while the proxy is busy).
			sc.Close()
			if n := sc.proxy.inlined.Load(); inline && n == 0 || !inline && n != 0 {
				t.Errorf("%d of %d posts sent inline", n, len(ops))
			}
		})
	}
}

// TestFramePad: a padded Simple frame's payload starts at a multiple of
// frameAlign in its stream whatever came before, with less than one
// frameAlign of padding, and the header says so.
func TestFramePad(t *testing.T) {
	for off := uint64(0); off < 4*frameAlign; off++ {
		pad := framePad(off)
		if pad < 0 || pad >= frameAlign || (off+frameHeader+uint64(pad))%frameAlign != 0 {
			t.Fatalf("framePad(%d) = %d: payload at %d", off, pad, off+frameHeader+uint64(pad))
		}
	}
	b := make([]byte, frameHeader)
	putFrameHeader(b, 1<<40+3, 8, 63, 4<<20)
	if step, steps, pad, n := parseFrameHeader(b); step != 1<<40+3 || steps != 8 || pad != 63 || n != 4<<20 {
		t.Fatalf("header round trip: step %d, %d steps, pad %d, %d bytes", step, steps, pad, n)
	}
}

// TestNetInlineHandsOver: a sender whose small posts fill the socket (its
// receiver not reading) gets a frame the socket did not take whole; the
// proxy finishes it and sends the rest as room comes, and every post
// arrives whole and in order.
func TestNetInlineHandsOver(t *testing.T) {
	abort := proto.NewAbort()
	s, r, sc, _ := netPair(t, proto.LL, 8*2*(8<<10), abort) // 8 KiB steps: 4 KiB of data
	const n, most = 4 << 10, 1 << 18                        // at most 1 GiB before the socket fills
	payload := func(i int) []byte {
		b := make([]byte, n)
		for o := range b {
			b[o] = byte(i*31 + o)
		}
		return b
	}
	total := make(chan int, 1)
	errc := make(chan error, 1)
	go func() {
		// Post until a frame is left to the proxy (flush counts it before
		// LLSend returns), then 3 more, which the FIFO's credits take.
		posts := 0
		for ; posts < most && sc.proxy.handedOver.Load() == 0; posts++ {
			if err := s.LLSend(payload(posts)); err != nil {
				errc <- err
				return
			}
		}
		total <- posts + 3
		for end := posts + 3; posts < end; posts++ {
			if err := s.LLSend(payload(posts)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	posts := <-total
	if sc.proxy.handedOver.Load() == 0 {
		t.Fatalf("the socket took %d posts of %d bytes without filling", posts-3, n)
	}
	got := make([]byte, n)
	for i := 0; i < posts; i++ {
		if err := r.LLRecv(got); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
		if !bytes.Equal(got, payload(i)) {
			t.Fatalf("post %d differs", i)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d posts: %d inline, %d left half written to the proxy", posts, sc.proxy.inlined.Load(), sc.proxy.handedOver.Load())
}

// TestNetRankReadsFrames: a rank waiting for LL/LL128 frames reads the
// socket itself (its proxy held back here, so only the rank can): every
// frame arrives, among them one the rank read whole when its FIFO had no
// credit left and published once it had; then the proxy, let go, reads
// the rest alike.
func TestNetRankReadsFrames(t *testing.T) {
	for _, p := range []proto.Protocol{proto.LL, proto.LL128} {
		t.Run(p.String(), func(t *testing.T) {
			hold := make(chan struct{})
			netPairHoldRecv = hold
			defer func() { netPairHoldRecv = nil }()
			abort := proto.NewAbort()
			size := 8 * 8 * proto.LLLineBytes
			if p == proto.LL128 {
				size = 8 * 16 * proto.LL128LineBytes
			}
			s, r, _, rc := netPair(t, p, size, abort)
			// The rank reads the socket only once its proxy has the
			// connection (rx.ready), and a rank that found nothing to read
			// parks until the proxy publishes, which the hold forbids
			// here: wait for the connection before the first receive.
			for deadline := time.Now().Add(5 * time.Second); !rc.proxy.rx.ready.Load(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the receiving proxy never got its connection")
				}
			}
			send := func(i int) []byte {
				b := make([]byte, 1+i%s.F.StepData())
				for o := range b {
					b[o] = byte(i + 7*o)
				}
				return b
			}
			recv := func(i int) {
				t.Helper()
				want := send(i)
				got := make([]byte, len(want))
				var err error
				if p == proto.LL {
					err = r.LLRecv(got)
				} else {
					err = r.LL128Recv(got)
				}
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("frame %d differs", i)
				}
			}
			post := func(i int) error {
				if p == proto.LL {
					return s.LLSend(send(i))
				}
				return s.LL128Send(send(i))
			}
			// More frames than the FIFO's steps, all sent before the first
			// is received: the rank's first poll publishes Steps of them
			// and reads the next whole with no credit for it.
			const first = proto.Steps + 3
			for i := 0; i < first; i++ {
				if err := post(i); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
			}
			for i := 0; i < first; i++ {
				recv(i)
			}
			if got := rc.proxy.polled.Load(); got != first {
				t.Fatalf("the rank published %d of %d frames; want all (its proxy is held)", got, first)
			}
			close(hold)
			const more = 200
			errc := make(chan error, 1)
			go func() {
				for i := first; i < first+more; i++ {
					if err := post(i); err != nil {
						errc <- fmt.Errorf("frame %d: %w", i, err)
						return
					}
				}
				errc <- nil
			}()
			for i := first; i < first+more; i++ {
				recv(i)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if abort.Aborted() {
				t.Fatalf("aborted: %v", abort.Err())
			}
		})
	}
}

// TestSockPart: the parts of a slice over k sockets tile it in order,
// each boundary on a 64-byte line, each part at least MinSockPart less a
// line; a slice too small for k parts of MinSockPart goes whole on socket 0.
func TestSockPart(t *testing.T) {
	for k := 1; k <= MaxSocks; k++ {
		for _, n := range []int{0, 1, 63, 64, MinSockPart - 1, MinSockPart, k*MinSockPart - 1, k * MinSockPart, k*MinSockPart + 1, 3*MinSockPart*k + 17, 1 << 20, 4<<20 + 5} {
			next := 0
			for j := 0; j < k; j++ {
				lo, hi := sockPart(n, k, j)
				if lo == hi {
					continue
				}
				if lo != next || hi < lo || hi > n {
					t.Fatalf("n=%d k=%d: part %d is [%d, %d), want it to start at %d", n, k, j, lo, hi, next)
				}
				if lo%64 != 0 {
					t.Fatalf("n=%d k=%d: part %d starts at %d, not on a line", n, k, j, lo)
				}
				if split := n >= k*MinSockPart && k > 1; split && hi-lo < MinSockPart-64 {
					t.Fatalf("n=%d k=%d: part %d holds %d bytes", n, k, j, hi-lo)
				} else if !split && j != 0 {
					t.Fatalf("n=%d k=%d: a slice below %d bytes has a part on socket %d", n, k, k*MinSockPart, j)
				}
				next = hi
			}
			if next != n {
				t.Fatalf("n=%d k=%d: the parts end at %d", n, k, next)
			}
		}
	}
}

// TestNetSockets moves Simple slices of every size class through
// connections of several sockets and goroutines (slices whole on socket
// 0, split across all of them, one and two steps), the receiver taking
// half of them straight into its own buffer (SimpleWaitInto): every byte
// must arrive in place. Each byte depends on its slice and offset, so a
// part on the wrong socket or at the wrong offset shows.
func TestNetSockets(t *testing.T) {
	defer func() { netPairSocks, netPairThreads = 0, 0 }()
	for _, c := range []struct{ socks, threads int }{{1, 1}, {2, 1}, {3, 2}, {4, 4}, {5, 3}} {
		t.Run(fmt.Sprintf("socks=%d/threads=%d", c.socks, c.threads), func(t *testing.T) {
			netPairSocks, netPairThreads = c.socks, c.threads
			abort := proto.NewAbort()
			s, r, sc, rc := netPair(t, proto.Simple, 8*(512<<10), abort)
			stepBytes := s.F.StepBytes
			type op struct{ steps, n int }
			var ops []op
			for i := 0; i < 60; i++ {
				k := 1 + i%2
				n := []int{0, 1, 100 << 10, c.socks*MinSockPart - 1, c.socks * MinSockPart, 300<<10 + 3, stepBytes}[i%7]
				ops = append(ops, op{k, min(n*k, k*stepBytes)})
			}
			payload := func(i, n int) []byte {
				b := make([]byte, n)
				for o := range b {
					b[o] = byte(i*131 + o*7 + o>>8)
				}
				return b
			}
			errc := make(chan error, 1)
			go func() {
				for i, o := range ops {
					s.AlignStep(o.steps)
					buf, err := s.SimpleAcquire(o.steps)
					if err != nil {
						errc <- err
						return
					}
					copy(buf, payload(i, o.n))
					s.SimplePost(o.steps, o.n)
				}
				errc <- nil
			}()
			for i, o := range ops {
				r.AlignStep(o.steps)
				got := make([]byte, o.n)
				var b []byte
				var err error
				if i%2 == 0 {
					b, err = r.SimpleWaitInto(o.steps, got)
				} else {
					b, err = r.SimpleWait(o.steps, o.n)
				}
				if err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				if len(got) > 0 && &b[0] != &got[0] {
					copy(got, b)
				}
				r.SimpleRelease(o.steps)
				if want := payload(i, o.n); !bytes.Equal(got, want) {
					at := 0
					for at < len(want) && got[at] == want[at] {
						at++
					}
					t.Fatalf("op %d (%d steps, %d bytes): payload differs from byte %d", i, o.steps, o.n, at)
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if abort.Aborted() {
				t.Fatalf("aborted: %v", abort.Err())
			}
			// Every slice of at least socks x MinSockPart went in parts. The
			// receiver counts a part before it posts the step, but a sending
			// helper counts its part after its write returns, which may be
			// after the receiver has read it: close the sending end (it waits
			// for its proxy, which waits for its helpers) before reading.
			sc.Close()
			want := 0
			for _, o := range ops {
				if lo, hi := sockPart(o.n, c.socks, 1); lo != hi {
					want += c.socks - 1
				}
			}
			if got := int(sc.proxy.sideParts.Load()); got != want || int(rc.proxy.sideParts.Load()) != want {
				t.Fatalf("parts on sockets 1..%d: sent %d, received %d, want %d", c.socks-1, got, rc.proxy.sideParts.Load(), want)
			}
		})
	}
}

// TestNetRefusesWrongToken: a connection with another job's token fails
// at once at both ends, each saying why (neither learns the other's
// token); the listener goes on and admits the right one.
func TestNetRefusesWrongToken(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	l, err := ListenNet("127.0.0.1:0", "right", func(format string, args ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(format, args...))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	_, err = dialNet(l.Addr(), "wrong", "k", 30*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "is not this job's network listener (it could not prove the job token)") {
		t.Fatalf("a wrong token: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the wrong token failed after %v: want at once, not at the timeout", d)
	}
	c, err := dialNet(l.Addr(), "right", "k", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := l.Await("k", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	got.Close()
	// The listener logs the refusal from its own goroutine, which may come
	// after the joiner has given up and the next dial got through.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(logged)
		mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], "failed authentication (it holds another job's token)") {
		t.Fatalf("the refusal was not logged once: %q", logged)
	}
}

// TestNetLinkDownAborts: when the socket goes away under a connection, the
// proxy aborts the job with an error naming the connection and the peer,
// and a rank waiting on the FIFO returns that error instead of hanging.
func TestNetLinkDownAborts(t *testing.T) {
	abort := proto.NewAbort()
	s, _, _, rc := netPair(t, proto.Simple, 8*1024, abort)
	// Cut the receiver's socket (as a link taken down would, seen from here).
	cutUnder(t, rc)
	deadline := time.Now().Add(5 * time.Second)
	for !abort.Aborted() && time.Now().Before(deadline) {
		buf, err := s.SimpleAcquire(1)
		if err != nil {
			break
		}
		s.SimplePost(1, len(buf))
		time.Sleep(time.Millisecond)
	}
	err := abort.Err()
	if err == nil || !errors.Is(err, proto.ErrAborted) || !strings.Contains(err.Error(), "rank 0 -> rank 1") || !strings.Contains(err.Error(), "the link to rank") {
		t.Fatalf("want an abort naming the connection and the peer host, got %v", err)
	}
}

// cutUnder closes the socket of c's proxy without telling the proxy.
func cutUnder(t *testing.T, c *Conn) {
	t.Helper()
	px := c.proxy
	if px == nil {
		t.Fatal("no proxy recorded for the connection")
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		px.connMu.Lock()
		conn := px.conn
		px.connMu.Unlock()
		if conn != nil {
			conn.Close()
			return
		}
	}
	t.Fatal("the receiving proxy never got its connection")
}

// BenchmarkNetPingPong times an 8-byte LL step there and back through two
// network connections (four proxies) over loopback, beside a plain TCP
// ping-pong of the same bytes on one socket pair.
func BenchmarkNetPingPong(b *testing.B) {
	for _, spin := range []time.Duration{0, 2 * time.Millisecond} {
		b.Run(fmt.Sprintf("net/spin=%v", spin), func(b *testing.B) {
			netPairSpin = spin
			defer func() { netPairSpin = 0 }()
			benchNetPingPong(b)
		})
	}
	b.Run("tcp", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			buf := make([]byte, 8)
			for {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		buf := make([]byte, 8)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchNetPingPong bounces 8 bytes through two connections (four proxies).
func benchNetPingPong(b *testing.B) {
	abort := proto.NewAbort()
	s1, r1, _, _ := netPair(b, proto.LL, 8*8*proto.LLLineBytes, abort)
	s2, r2, _, _ := netPair(b, proto.LL, 8*8*proto.LLLineBytes, abort)
	msg, got := make([]byte, 8), make([]byte, 8)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < b.N; i++ {
			if err := r1.LLRecv(got); err != nil {
				done <- err
				return
			}
			if err := s2.LLSend(got); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s1.LLSend(msg); err != nil {
			b.Fatal(err)
		}
		if err := r2.LLRecv(msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
