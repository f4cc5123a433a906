package server_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// start starts a server with default settings and connects one client.
// With DSS_TEST_TARGET=leader or follower in the environment it starts a
// 3-node cluster instead and returns that node of it (see
// TestProtocolThroughEveryClusterRole).
func start(t *testing.T) (*server.Server, *dsstest.Client) {
	t.Helper()
	s := startServer(t, server.Config{})
	return s, dsstest.Dial(t, s.Addr(), strings.ReplaceAll(t.Name(), "/", "-"))
}

// startServer starts a server with cfg, or with DSS_TEST_TARGET a 3-node
// cluster with cfg on every node, and returns that node of it.
func startServer(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	switch target := os.Getenv(targetEnv); target {
	case "", "single":
		return dsstest.StartServer(t, cfg)
	case "leader", "follower":
		// Timeouts that a machine loaded by the whole suite does not
		// run out of: an election would answer a request "unavailable",
		// which the protocol tests do not expect of a single node.
		cfg.Cluster.HeartbeatTimeout = 2 * time.Second
		leader, followers := roles(t, startClusterWith(t, 3, cfg))
		if target == "follower" {
			return followers[0]
		}
		return leader
	default:
		t.Fatalf("%s=%q: want single, leader or follower", targetEnv, target)
		return nil
	}
}

// targetEnv names the node of a cluster that start returns.
const targetEnv = "DSS_TEST_TARGET"

// expect checks a response's payload and its __ts: wantVersion "" means
// the response must carry no __ts, "any" that it must carry a valid one.
func expect(t *testing.T, what string, p *paho.Publish, payload string, wantVersion string) hlc.Timestamp {
	t.Helper()
	if string(p.Payload) != payload {
		t.Fatalf("%s: payload %q, want %q", what, p.Payload, payload)
	}
	if st, _ := dsstest.UserProperty(p, wire.PropStatus); st != "200" {
		t.Fatalf("%s: __stat %q, want 200", what, st)
	}
	ts, ok := dsstest.UserProperty(p, wire.PropTimestamp)
	switch {
	case wantVersion == "" && ok:
		t.Fatalf("%s: __ts %q present, want none", what, ts)
	case wantVersion == "":
		return hlc.Timestamp{}
	case !ok:
		t.Fatalf("%s: no __ts", what)
	}
	v, err := hlc.Parse(ts)
	if err != nil {
		t.Fatalf("%s: __ts %q: %v", what, ts, err)
	}
	if wantVersion != "any" && ts != wantVersion {
		t.Fatalf("%s: __ts %q, want %q", what, ts, wantVersion)
	}
	return v
}

func errPayload(e *wire.Error) string { return "-ERR " + e.Text() + "\r\n" }

func ts(v string) paho.UserProperty { return paho.UserProperty{Key: wire.PropTimestamp, Value: v} }
func ft(v string) paho.UserProperty { return paho.UserProperty{Key: wire.PropFencingToken, Value: v} }
