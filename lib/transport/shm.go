package transport

import (
	"fmt"
	"time"

	"github.com/gccl/gccl/lib/proto"
	"github.com/gccl/gccl/lib/shm"
)

// Shm connects ranks of different processes on one host through a segment
// of shared memory per connection (NCCL's SHM transport). Both processes
// derive the segment's name from the connection, so each opens its end
// without a message to the other: the first creates and initialises the
// FIFO, the second maps it, and the name is unlinked once both have.
type Shm struct {
	Dir    string // directory of the segments (ccl.Config.ShmDir, or shm.DefaultDir)
	Prefix string // names the job's segments: unique per communicator set
	// Timeout bounds the wait for the other end's creator; Stop ends it
	// early (the communicators aborted).
	Timeout time.Duration
	Stop    func() bool
}

func (Shm) Name() string { return "shm" }

func (Shm) CanConnect(from, to Peer) bool {
	return from.Host == to.Host && from.Pid != to.Pid
}

// SegmentName is the segment of one connection's protocol.
func (t Shm) SegmentName(req Request) string {
	return fmt.Sprintf("%s-%d-%d-c%d-%s-%s-%d", t.Prefix, req.From.Rank, req.To.Rank, req.Channel, req.Kind, req.Proto, req.BuffSize)
}

func (t Shm) Connect(req Request) (*Conn, error) {
	if req.Sides == BothSides {
		return nil, fmt.Errorf("shm: both ends in one process: use the in-process transport")
	}
	if err := proto.ValidateBuffSize(req.Proto, req.BuffSize); err != nil {
		return nil, err
	}
	var initErr error
	seg, err := shm.Open(t.Dir, t.SegmentName(req), proto.FifoBytes(req.BuffSize), func(mem []byte) {
		_, initErr = proto.NewFifoAt(req.Proto, req.BuffSize, req.Options, mem, true)
	}, t.Timeout, t.Stop)
	if err != nil {
		return nil, err
	}
	if initErr != nil {
		seg.Close()
		return nil, initErr
	}
	seg.MarkMapped(2)
	f, err := proto.NewFifoAt(req.Proto, req.BuffSize, req.Options, seg.Data(), false)
	if err != nil {
		seg.Close()
		return nil, err
	}
	c := &Conn{Close: seg.Close}
	if req.Sides == SendOnly {
		c.SendSide = f
	} else {
		c.RecvSide = f
	}
	return c, nil
}
