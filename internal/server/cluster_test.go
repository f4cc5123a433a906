package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// freeAddrs returns n loopback addresses that were free a moment ago,
// below the ephemeral range (see dsstest.NodeAddr).
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for i := 0; i < n; i++ {
		addrs = append(addrs, dsstest.NodeAddr(t))
	}
	return addrs
}

// startCluster starts a cluster of n servers in this process.
func startCluster(t *testing.T, n int) []*server.Server {
	t.Helper()
	return startClusterWith(t, n, server.Config{})
}

// startClusterWith is startCluster with base as every node's settings
// beside its id, data directory and cluster listener.
func startClusterWith(t *testing.T, n int, base server.Config) []*server.Server {
	t.Helper()
	addrs := freeAddrs(t, n)
	var peers []cluster.Peer
	for i, a := range addrs {
		peers = append(peers, cluster.Peer{ID: fmt.Sprint("n", i+1), Addr: a})
	}
	var servers []*server.Server
	for i := range addrs {
		cfg := base
		cfg.NodeID, cfg.DataDir = peers[i].ID, t.TempDir()
		cfg.Cluster.Listen, cfg.Cluster.Peers = addrs[i], peers
		servers = append(servers, dsstest.StartServer(t, cfg))
	}
	// Ready: every node knows the leader and has applied the entry that
	// starts its term, so writes and reads through any node are served
	// without waiting.
	dsstest.Eventually(t, "every node ready", func() bool {
		for _, s := range servers {
			if s.Ready() != nil {
				return false
			}
		}
		return true
	})
	return servers
}

func stale() paho.UserProperty {
	return paho.UserProperty{Key: wire.PropConsistency, Value: wire.ConsistencyStale}
}

// term returns the highest Raft term the servers know.
func term(servers []*server.Server) uint64 {
	var max uint64
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, _, _ := s.ClusterStatus(ctx)
		cancel()
		if st.Term > max {
			max = st.Term
		}
	}
	return max
}

// sendUnlessElected sends a request through c and returns the response.
// "The state store is unavailable" is taken only when an election (a
// new term) explains it: a leader lost on an overloaded machine (its
// process stalled past the lease). Then the request is sent again, as a
// client does; otherwise the test fails: a cluster whose leader serves
// answers every request.
func sendUnlessElected(t *testing.T, servers []*server.Server, c *dsstest.Client, payload []byte, user ...paho.UserProperty) *paho.Publish {
	t.Helper()
	for range 10 {
		before := term(servers)
		r := c.Await(c.Send(payload, user...))
		if string(r.Payload) != "-ERR "+wire.ErrUnavailable.Text()+"\r\n" {
			return r
		}
		after := term(servers)
		if after == before {
			t.Fatalf("%q through %s: %q while the leader of term %d served", payload, c.ID, r.Payload, before)
		}
		t.Logf("%q through %s: %q during an election (term %d, then %d); sent again", payload, c.ID, r.Payload, before, after)
	}
	t.Fatalf("%q through %s: unavailable through 10 elections", payload, c.ID)
	return nil
}

func TestClusterWritesAndReadsThroughEveryNode(t *testing.T) {
	servers := startCluster(t, 3)
	var clients []*dsstest.Client
	for i, s := range servers {
		clients = append(clients, dsstest.Dial(t, s.Addr(), fmt.Sprint("c", i)))
	}
	var last hlc.Timestamp
	for i := 0; i < 30; i++ {
		c := clients[i%3]
		r := sendUnlessElected(t, servers, c, dsstest.Cmd("SET", "k", fmt.Sprint("v", i)), ts(dsstest.Now()))
		v := expect(t, fmt.Sprint("SET ", i), r, "+OK\r\n", "any")
		if !last.Before(v) {
			t.Fatalf("SET %d has version %v after %v", i, v, last)
		}
		last = v
		// A linearizable GET through another node sees it at once.
		g := clients[(i+1)%3]
		expect(t, fmt.Sprint("GET ", i), sendUnlessElected(t, servers, g, dsstest.Cmd("GET", "k")), fmt.Sprintf("$%d\r\nv%d\r\n", len(fmt.Sprint("v", i)), i), "any")
	}
	// Every node's own copy converges; a stale read shows it.
	for _, c := range clients {
		dsstest.Eventually(t, "the copies to converge", func() bool {
			r := c.Await(c.Send(dsstest.Cmd("GET", "k"), stale()))
			return string(r.Payload) == "$3\r\nv29\r\n"
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, ok, err := servers[0].ClusterStatus(ctx)
	if !ok || err != nil || len(st.Members) != 3 || st.Leader == "" {
		t.Fatalf("status: %+v %v %v", st, ok, err)
	}
}
