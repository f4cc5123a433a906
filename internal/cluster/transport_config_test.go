package cluster

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The Raft transport replicates without a pipeline: hashicorp/raft's
// pipelined replication can stop sending entries to a follower for good
// (see transportConfig).
func TestRaftReplicatesWithoutAPipeline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trans := raft.NewNetworkTransportWithConfig(transportConfig(tcpStream{ln}, hclog.NewNullLogger()))
	defer trans.Close()
	_, err = trans.AppendEntriesPipeline("n2", raft.ServerAddress(ln.Addr().String()))
	if !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("AppendEntriesPipeline: %v, want %v", err, raft.ErrPipelineReplicationNotSupported)
	}
}

// tcpStream is a raft.StreamLayer of plain TCP on loopback.
type tcpStream struct{ net.Listener }

func (s tcpStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}
