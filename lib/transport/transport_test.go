package transport

import (
	"strings"
	"testing"

	"github.com/gccl/gccl/lib/proto"
)

type never struct{}

func (never) Name() string                   { return "never" }
func (never) CanConnect(from, to Peer) bool  { return false }
func (never) Connect(Request) (*Conn, error) { panic("not reached") }

func TestConnectFirstMatchWins(t *testing.T) {
	req := Request{From: Peer{Rank: 0, Host: "h", Pid: 1}, To: Peer{Rank: 1, Host: "h", Pid: 1},
		Proto: proto.LL, BuffSize: proto.DefaultLLBuffSize}
	c, err := Connect([]Transport{never{}, InProc{}}, req)
	if err != nil {
		t.Fatal(err)
	}
	if c.Transport != "inproc" || c.SendSide != c.RecvSide {
		t.Fatalf("want one shared inproc FIFO, got %+v", c)
	}
}

func TestConnectNoTransportNamesBothRanks(t *testing.T) {
	req := Request{From: Peer{Rank: 3, Host: "a", Pid: 1}, To: Peer{Rank: 5, Host: "b", Pid: 2}, Proto: proto.Simple, BuffSize: proto.DefaultSimpleBuffSize}
	_, err := Connect([]Transport{InProc{}}, req)
	if err == nil || !strings.Contains(err.Error(), "rank 3") || !strings.Contains(err.Error(), "rank 5") {
		t.Fatalf("want an error naming both ranks, got %v", err)
	}
}

func TestConnectBadBufferSize(t *testing.T) {
	req := Request{Proto: proto.LL128, BuffSize: 1000}
	_, err := Connect([]Transport{InProc{}}, req)
	if err == nil || !strings.Contains(err.Error(), "LL128") {
		t.Fatalf("want an LL128 buffer size error, got %v", err)
	}
}
