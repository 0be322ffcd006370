// Command tcpcopy is the plain-socket yardstick the network transport is
// measured against (scripts/netns-bench.sh): the same endpoints, one TCP
// connection with the transport's socket settings, nothing else.
//
//	tcpcopy serve ADDR              accept connections; echo pings, sink streams
//	tcpcopy stream ADDR BYTES REPS  send BYTES REPS times; print GB/s per rep (median last)
//	tcpcopy duplex ADDR BYTES REPS  send BYTES and receive BYTES at once, REPS times: GB/s
//	                                each way (the pattern of 2 ranks' sendrecv and ring allreduce)
//	tcpcopy ring ADDR BYTES REPS    a lean 2-rank ring allreduce of BYTES float32s with
//	                                the server, REPS times: busBw (GB/s; the first rep
//	                                allocates the buffers): what an allreduce over this
//	                                socket reaches with no stack around it
//	tcpcopy ping ADDR N             N 8-byte round trips; print the median in us
package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/gccl/gccl/lib/reduce"
)

const bufBytes = 4 << 20 // the transport's socket buffers

func tune(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetReadBuffer(bufBytes)
		_ = tc.SetWriteBuffer(bufBytes)
	}
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: tcpcopy serve ADDR | stream|duplex|ring ADDR BYTES REPS | ping ADDR N")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2])
	case "stream":
		err = stream(os.Args[2], atoi(os.Args[3]), atoi(os.Args[4]))
	case "duplex":
		err = duplex(os.Args[2], atoi(os.Args[3]), atoi(os.Args[4]))
	case "ring":
		err = ring(os.Args[2], atoi(os.Args[3]), atoi(os.Args[4]))
	case "ping":
		err = ping(os.Args[2], atoi(os.Args[3]))
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcpcopy:", err)
		os.Exit(1)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		fmt.Fprintf(os.Stderr, "tcpcopy: %q: want a positive integer\n", s)
		os.Exit(2)
	}
	return n
}

// serve answers each connection by its first byte: 'p' echoes 8-byte
// pings, 'r' runs the ring allreduce's other end, 'd' sends and sinks at
// once, 's' reads a length and sinks that many bytes per rep, acking each.
func serve(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		tune(c)
		go func() {
			defer c.Close()
			var mode [1]byte
			if _, err := io.ReadFull(c, mode[:]); err != nil {
				return
			}
			if mode[0] == 'p' {
				var b [8]byte
				for {
					if _, err := io.ReadFull(c, b[:]); err != nil {
						return
					}
					if _, err := c.Write(b[:]); err != nil {
						return
					}
				}
			}
			buf := make([]byte, 1<<20)
			var hdr [8]byte
			if mode[0] == 'r' {
				var st ringState
				for {
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					if err := st.allreduce(c, int(binary.LittleEndian.Uint64(hdr[:])), 1); err != nil {
						return
					}
				}
			}
			if mode[0] == 'd' {
				out := make([]byte, 1<<20)
				for {
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					n := int(binary.LittleEndian.Uint64(hdr[:]))
					done := make(chan error, 1)
					go func() { done <- sendBytes(c, out, n) }()
					if err := sinkBytes(c, buf, n); err != nil || <-done != nil {
						return
					}
				}
			}
			for {
				if _, err := io.ReadFull(c, hdr[:]); err != nil {
					return
				}
				for left := int64(binary.LittleEndian.Uint64(hdr[:])); left > 0; {
					n, err := c.Read(buf[:min(int64(len(buf)), left)])
					if err != nil {
						return
					}
					left -= int64(n)
				}
				if _, err := c.Write([]byte{1}); err != nil {
					return
				}
			}
		}()
	}
}

func dial(addr string, mode byte) (net.Conn, error) {
	var c net.Conn
	var err error
	for i := 0; i < 100; i++ { // the server may still be starting
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	tune(c)
	_, err = c.Write([]byte{mode})
	return c, err
}

func stream(addr string, bytes, reps int) error {
	return timedReps(addr, 's', "stream", "", bytes, reps, func(c net.Conn, out, in []byte) error {
		if err := sendBytes(c, out, bytes); err != nil {
			return err
		}
		var ack [1]byte
		_, err := io.ReadFull(c, ack[:])
		return err
	})
}

// timedReps dials addr in mode and runs rep reps times, each after a
// header saying bytes: GB/s is bytes over a rep's time, median printed.
func timedReps(addr string, mode byte, name, unit string, bytes, reps int, rep func(c net.Conn, out, in []byte) error) error {
	c, err := dial(addr, mode)
	if err != nil {
		return err
	}
	defer c.Close()
	out, in := make([]byte, min(bytes, 4<<20)), make([]byte, 1<<20)
	var gbs []float64
	for r := 0; r < reps; r++ {
		start := time.Now()
		var hdr [8]byte
		binary.LittleEndian.PutUint64(hdr[:], uint64(bytes))
		if _, err := c.Write(hdr[:]); err != nil {
			return err
		}
		if err := rep(c, out, in); err != nil {
			return err
		}
		gbs = append(gbs, float64(bytes)/time.Since(start).Seconds()/1e9)
	}
	slices.Sort(gbs)
	fmt.Printf("%s %d B x %d: median %.3f GB/s%s (min %.3f, max %.3f)\n", name, bytes, reps, gbs[len(gbs)/2], unit, gbs[0], gbs[len(gbs)-1])
	return nil
}

func sendBytes(c net.Conn, buf []byte, n int) error {
	for left := n; left > 0; left -= min(len(buf), left) {
		if _, err := c.Write(buf[:min(len(buf), left)]); err != nil {
			return err
		}
	}
	return nil
}

func sinkBytes(c net.Conn, buf []byte, n int) error {
	for left := n; left > 0; {
		k, err := c.Read(buf[:min(len(buf), left)])
		if err != nil {
			return err
		}
		left -= k
	}
	return nil
}

// duplex sends bytes while the server sends bytes back on the same
// connection, reps times; GB/s is bytes over the time both took, each way.
func duplex(addr string, bytes, reps int) error {
	return timedReps(addr, 'd', "duplex", " each way", bytes, reps, func(c net.Conn, out, in []byte) error {
		done := make(chan error, 1)
		go func() { done <- sendBytes(c, out, bytes) }()
		if err := sinkBytes(c, in, bytes); err != nil {
			return err
		}
		return <-done
	})
}

func ping(addr string, n int) error {
	c, err := dial(addr, 'p')
	if err != nil {
		return err
	}
	defer c.Close()
	var b [8]byte
	rt := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := c.Write(b[:]); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return err
		}
		rt = append(rt, float64(time.Since(start).Nanoseconds())/1e3)
	}
	slices.Sort(rt)
	fmt.Printf("ping 8 B x %d: median round trip %.2f us (p10 %.2f, p90 %.2f)\n", n, rt[n/2], rt[n/10], rt[n*9/10])
	return nil
}

// ringState holds a ring allreduce's buffers between reps: an input and an
// output of the rep's size, allocated once (as the perf tools' buffers), a
// chunk to receive into, and the stack's own float32 sum kernel, so the
// yardstick reduces as fast as the stack does.
type ringState struct {
	in, out, buf []byte
	sum          *reduce.Kernel
}

// ringChunk is what the ring allreduce moves per write: NCCL's Simple slice
// over the network with 4 MiB buffers.
const ringChunk = 1 << 20

// allreduce is a lean 2-rank ring allreduce of bytes float32s over c, both
// ends alike: send one half of the input (half is 0 or 1: which), receive
// the peer's copy of the other half, add it to ours into the output and
// send the sum back as each chunk arrives, then receive the peer's sum of
// our half. One writer and one reader goroutine, chunks of ringChunk.
func (st *ringState) allreduce(c net.Conn, bytes, half int) error {
	if bytes%8 != 0 {
		return fmt.Errorf("ring: %d bytes: want a multiple of 8 (two halves of float32s)", bytes)
	}
	if st.sum == nil {
		k, err := reduce.NewKernel(reduce.Float32, reduce.Sum, 0, 2)
		if err != nil {
			return err
		}
		st.sum, st.buf = k, make([]byte, ringChunk)
	}
	if len(st.in) != bytes {
		st.in, st.out = make([]byte, bytes), make([]byte, bytes)
		for i := range st.in {
			st.in[i] = byte(i)
		}
	}
	h := bytes / 2
	mine, theirs := [2]int{0, h}, [2]int{h, bytes}
	if half == 1 {
		mine, theirs = theirs, mine
	}
	summed := make(chan [2]int, (bytes/ringChunk)+2)
	done := make(chan error, 1)
	go func() {
		for o := mine[0]; o < mine[1]; o += ringChunk {
			if _, err := c.Write(st.in[o:min(o+ringChunk, mine[1])]); err != nil {
				done <- err
				return
			}
		}
		for r := range summed {
			if _, err := c.Write(st.out[r[0]:r[1]]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for o := theirs[0]; o < theirs[1]; o += ringChunk {
		e := min(o+ringChunk, theirs[1])
		if _, err := io.ReadFull(c, st.buf[:e-o]); err != nil {
			return err
		}
		st.sum.Reduce(st.out[o:e], st.buf[:e-o], st.in[o:e], false)
		summed <- [2]int{o, e}
	}
	close(summed)
	if _, err := io.ReadFull(c, st.out[mine[0]:mine[1]]); err != nil {
		return err
	}
	return <-done
}

// ring times a lean 2-rank ring allreduce of bytes with the server, reps
// times: GB/s is bytes over a rep's time (the busBw of 2 ranks).
func ring(addr string, bytes, reps int) error {
	if bytes%8 != 0 {
		return fmt.Errorf("ring: %d bytes: want a multiple of 8 (two halves of float32s)", bytes)
	}
	var st ringState
	return timedReps(addr, 'r', "ring allreduce", " busBw", bytes, reps, func(c net.Conn, out, in []byte) error {
		return st.allreduce(c, bytes, 0)
	})
}
