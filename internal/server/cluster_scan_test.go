package server_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// TestClusterScanAcrossNodesAndALeaderChange pages through a SCAN on a
// 3-node cluster, each page through another node, and goes on after the
// leader stops, with the token it made, through the nodes that remain:
// every key present throughout is listed once.
func TestClusterScanAcrossNodesAndALeaderChange(t *testing.T) {
	servers := startCluster(t, 3)
	var clients []*dsstest.Client
	for i, s := range servers {
		clients = append(clients, dsstest.Dial(t, s.Addr(), fmt.Sprint("scan", i)))
	}
	const n = 3000 // three pages and more: a page looks at 1,024 keys
	want := make([]string, 0, n)
	// The keys are written a window at a time through every node, each
	// window's writes in flight together; one at a time they took most
	// of the test's 48 s under -race. A write answered "unavailable"
	// during an election is sent again on its own.
	const window = 150
	for start := 0; start < n; start += window {
		var sent []chan *paho.Publish
		for i := start; i < min(start+window, n); i++ {
			k := fmt.Sprintf("key/%05d", i)
			want = append(want, k)
			sent = append(sent, clients[i%3].Send(dsstest.Cmd("SET", k, "v"), ts(dsstest.Now())))
		}
		for j, ch := range sent {
			i := start + j
			c := clients[i%3]
			r := c.Await(ch)
			if string(r.Payload) == "-ERR "+wire.ErrUnavailable.Text()+"\r\n" {
				r = sendUnlessElected(t, servers, c, dsstest.Cmd("SET", want[i], "v"), ts(dsstest.Now()))
			}
			expect(t, "SET "+want[i], r, "+OK\r\n", "any")
		}
	}
	slices.Sort(want)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, _, err := servers[0].ClusterStatus(ctx)
	if err != nil || st.Leader == "" {
		t.Fatalf("status: %+v %v", st, err)
	}
	leader := slices.IndexFunc(servers, func(s *server.Server) bool { return fmt.Sprint("n", slices.Index(servers, s)+1) == st.Leader })

	var listed []string
	var token []byte
	stopped := false
	for page := 0; ; page++ {
		i := page % len(clients)
		args := [][]byte{[]byte("SCAN"), []byte("key/*")}
		if token != nil {
			args = append(args, token)
		}
		p := sendUnlessElected(t, servers, clients[i], resp.AppendArray(nil, args...))
		keys, tok, more, err := resp.ParseScanPage(p.Payload)
		if err != nil {
			t.Fatalf("page %d through n%d: %q: %v", page, i+1, p.Payload, err)
		}
		for _, k := range keys {
			listed = append(listed, string(k))
		}
		if !more {
			break
		}
		token = append([]byte(nil), tok...)
		if page == 1 && !stopped {
			// The leader goes; the token it or another node made goes on
			// through the others once they elect a new leader.
			sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = servers[leader].Shutdown(sctx)
			scancel()
			stopped = true
			rest := slices.Delete(slices.Clone(servers), leader, leader+1)
			dsstest.Eventually(t, "a new leader", func() bool {
				for _, s := range rest {
					if s.Ready() != nil {
						return false
					}
				}
				return true
			})
			servers = rest
			clients = slices.Delete(clients, leader, leader+1)
		}
	}
	if !stopped {
		t.Fatal("the scan ended before the leader was stopped")
	}
	slices.Sort(listed)
	if !slices.Equal(listed, want) {
		t.Fatalf("listed %d keys (%d distinct), want %d", len(listed), len(slices.Compact(slices.Clone(listed))), n)
	}
}
