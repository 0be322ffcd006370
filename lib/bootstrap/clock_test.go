package bootstrap

import (
	"testing"
	"time"
)

// TestClockOffset: processes whose clocks run 5 s and -3 s off the
// root's measure those offsets to within the bound they report, while
// collectives go on beside the measurements.
func TestClockOffset(t *testing.T) {
	r, _ := newRoot(t, 10*time.Second)
	cs, errs := joinAll(t, r, 3, [][]int{{0}, {1}, {2}}, 10*time.Second)
	noErr(t, "join", errs)
	defer closeAll(cs)
	shifts := []int64{5e9, -3e9, 0}
	offsets, bounds := make([]int64, 3), make([]int64, 3)
	noErr(t, "measure", each(cs, func(i int, c *Client) error {
		if _, err := c.AllGather([]byte{byte(i)}); err != nil {
			return err
		}
		var err error
		offsets[i], bounds[i], err = c.ClockOffset(func() int64 { return RootClock() - shifts[i] }, 10)
		if err != nil {
			return err
		}
		_, err = c.AllGather([]byte{byte(i)})
		return err
	}))
	for i := range cs {
		if d := offsets[i] - shifts[i]; d < -bounds[i] || d > bounds[i] || bounds[i] <= 0 || bounds[i] > int64(time.Second) {
			t.Errorf("process %d: offset %d ns, bound %d ns: want %d within the bound (positive, under a second)", i, offsets[i], bounds[i], shifts[i])
		}
	}
	if _, _, err := cs[0].ClockOffset(RootClock, 0); err == nil {
		t.Error("ClockOffset of 0 rounds: no error")
	}
}
