// clock.go: the root's clock, read by a process in a timed round trip
// (Client.ClockOffset), for aligning the clocks of a job's processes.

package bootstrap

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// clockBase is the root's clock's zero.
var clockBase = time.Now()

// RootClock is the clock the root of this process answers clock requests
// with: nanoseconds since a base of this process, monotonic. A process
// that serves its job's root reads it to relate its own clocks to the
// root's without a round trip.
func RootClock() int64 { return int64(time.Since(clockBase)) }

// clockAnswer is the root's answer to clock request id: its clock.
type clockAnswer struct {
	id uint64
	ns int64
}

// answerClock answers a process's clock request at once, with the root's
// clock as it reads it now.
func (m *member) answerClock(p []byte) error {
	if len(p) != 8 {
		return fmt.Errorf("a clock request of %d bytes, want 8", len(p))
	}
	b := binary.LittleEndian.AppendUint64(p[:8:8], uint64(RootClock()))
	m.send(frameTime, b)
	return nil
}

// ClockOffset measures the root's clock (RootClock in the root's process)
// against now, a clock of this process in nanoseconds, in rounds timed
// round trips to the root, and returns what the fastest of them says:
// offset, the root's clock minus now's, taken as if the root read its
// clock in the middle of the round trip, and bound, half that round trip,
// within which the offset is right either way (the root read its clock
// somewhere inside it). One measurement at a time per client.
func (c *Client) ClockOffset(now func() int64, rounds int) (offset, bound int64, err error) {
	if rounds < 1 {
		return 0, 0, fmt.Errorf("bootstrap: ClockOffset: %d rounds, want at least 1", rounds)
	}
	c.clockMu.Lock()
	defer c.clockMu.Unlock()
	best := int64(math.MaxInt64)
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	for range rounds {
		c.clockID++
		id := c.clockID
		t1 := now()
		if err := c.send(frameClock, binary.LittleEndian.AppendUint64(nil, id)); err != nil {
			return 0, 0, fmt.Errorf("bootstrap: ClockOffset: sending to the root at %s: %w", c.addr, err)
		}
		var a clockAnswer
		for a.id != id { // an answer to an earlier, abandoned request is dropped
			select {
			case a = <-c.clock:
			case <-c.lost:
				return 0, 0, fmt.Errorf("bootstrap: ClockOffset: %w", c.lostErr)
			case <-t.C:
				return 0, 0, fmt.Errorf("bootstrap: ClockOffset: the root at %s did not answer within %v", c.addr, c.timeout)
			}
		}
		t2 := now()
		if rtt := t2 - t1; rtt < best {
			best, offset = rtt, a.ns-(t1+rtt/2)
		}
	}
	return offset, (best + 1) / 2, nil
}
