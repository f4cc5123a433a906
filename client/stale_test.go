package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// TestGetStaleReadFromANodeWithoutMajority: a node of a cluster whose
// other nodes stopped answers a Get given StaleRead from its own copy,
// and a linearizable Get not at all.
func TestGetStaleReadFromANodeWithoutMajority(t *testing.T) {
	var peers []cluster.Peer
	for i := 1; i <= 3; i++ {
		peers = append(peers, cluster.Peer{ID: fmt.Sprint("n", i), Addr: dsstest.NodeAddr(t)})
	}
	var servers []*server.Server
	for _, p := range peers {
		servers = append(servers, dsstest.StartServer(t, server.Config{
			NodeID: p.ID, DataDir: t.TempDir(),
			Cluster: server.ClusterConfig{Listen: p.Addr, Peers: peers},
		}))
	}
	c := dial(t, servers[0].Addr())
	dsstest.Eventually(t, "a write through the cluster", func() bool {
		_, err := c.Set(ctxT(t), "k", []byte("v"))
		return err == nil
	})
	// The write reached n1's copy too once a linearizable read through
	// n1 sees it.
	if e, found, err := c.Get(ctxT(t), "k"); err != nil || !found || string(e.Value) != "v" {
		t.Fatalf("Get: %q %v %v", e.Value, found, err)
	}
	for _, s := range servers[1:] {
		ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
		_ = s.Shutdown(ctx)
		cancel()
	}
	e, found, err := c.Get(ctxT(t), "k", StaleRead)
	if err != nil || !found || string(e.Value) != "v" {
		t.Fatalf("Get with StaleRead without a majority: %q %v %v", e.Value, found, err)
	}
	// A read that starts as the others stop can still be confirmed by a
	// heartbeat they answered before stopping (the leader counts a
	// response that arrives after the read began); no other leader can
	// exist then, so the value is current. Once n1 knows it has lost its
	// majority, a linearizable read must fail.
	dsstest.Eventually(t, "n1 knows it has no majority", func() bool { return servers[0].Ready() != nil })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, _, err := c.Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a linearizable Get without a majority: %v", err)
	}
}
