package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/dssio/dss/internal/console"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func status(t *testing.T, s *server.Server) console.Status {
	t.Helper()
	code, body := dsstest.HTTPGet(t, s.HTTPAddr(), console.StatusPath)
	if code != http.StatusOK {
		t.Fatalf("%s: %d %s", console.StatusPath, code, body)
	}
	var st console.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("%s: %v: %s", console.StatusPath, err, body)
	}
	return st
}

// /v1/status counts clients, requests and messages, for the console's
// rates.
func TestStatusCountsClientsRequestsAndMessages(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0"})
	before := status(t, s)
	if before.Node != "test" || before.Cluster != nil || before.NotReady != "" {
		t.Fatalf("status of a single node: %+v", before)
	}
	c := dsstest.Dial(t, s.Addr(), "counted")
	for range 3 {
		c.Set([]string{"k", "v"})
	}
	// The counter of a message sent may move just after the client
	// received it.
	var after console.Status
	dsstest.Eventually(t, "3 requests, 3 messages each way counted", func() bool {
		after = status(t, s)
		return after.MessagesSent-before.MessagesSent >= 3
	})
	if after.Clients != 1 || after.Keys != 1 || after.Requests-before.Requests != 3 ||
		after.MessagesReceived-before.MessagesReceived < 3 {
		t.Fatalf("after 3 requests of one client: %+v (before %+v)", after, before)
	}
}

// In a cluster, /v1/status of any node names the members, the leader and
// each member's lag.
func TestStatusOfAClusterThroughEveryNode(t *testing.T) {
	servers := startClusterWith(t, 3, server.Config{HTTPListen: "127.0.0.1:0"})
	leader, _ := roles(t, servers)
	c := dsstest.Dial(t, leader.Addr(), "writer")
	c.Set([]string{"k", "v"})
	for _, s := range servers {
		dsstest.Eventually(t, "every member in the status, none lagging", func() bool {
			st := status(t, s)
			if st.Cluster == nil || st.Cluster.Leader == "" || len(st.Cluster.Members) != 3 || st.Cluster.Error != "" {
				return false
			}
			for _, m := range st.Cluster.Members {
				if m.Error != "" || m.Lag != 0 || m.AppliedIndex == 0 || (m.ID == st.Cluster.Leader) != (m.State == "Leader") {
					return false
				}
			}
			return true
		})
	}
}
