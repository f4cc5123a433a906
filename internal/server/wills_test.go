package server_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// willPolicy lets alice publish under apps/alice/ and monitor subscribe
// to everything; willRevokedPolicy no longer lets alice publish.
const (
	willPolicy = `
rules:
  - principals: {usernames: [alice]}
    brokerResources: [{method: Connect}, {method: Publish, topics: ["apps/alice/#"]}]
  - principals: {usernames: [monitor]}
    brokerResources: [{method: Connect}, {method: Subscribe, topics: ["#"]}]
`
	willRevokedPolicy = `
rules:
  - principals: {usernames: [alice]}
    brokerResources: [{method: Connect}]
  - principals: {usernames: [monitor]}
    brokerResources: [{method: Connect}, {method: Subscribe, topics: ["#"]}]
`
)

// TestAWillIsCheckedWhenItIsSent: a Will is sent only if its client may
// still publish it when it goes out: on the immediate and on the delayed
// path, after the policy was reloaded. The delayed Will skipped the check
// and reached the subscriber although its right was revoked during the
// delay.
func TestAWillIsCheckedWhenItIsSent(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicy := func(p string) {
		t.Helper()
		if err := os.WriteFile(policy, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy(willPolicy)
	s := dsstest.StartServer(t, server.Config{
		Users:          usersFile(t, "alice", "alice-pw", "monitor", "monitor-pw"),
		Policy:         policy,
		ReloadInterval: -1,
		LoginDelay:     time.Millisecond,
		HTTPListen:     "127.0.0.1:0",
	})
	monitor := dsstest.DialWith(t, s.Addr(), "monitor", dsstest.Login{Username: "monitor", Password: "monitor-pw"})
	monitor.Subscribe("apps/#")

	// willer connects with a Will (delay seconds after its connection
	// ends) and loses its connection without a DISCONNECT.
	willer := func(id string, delay uint32) net.Conn {
		var conn net.Conn
		dsstest.DialWith(t, s.Addr(), id, dsstest.Login{Username: "alice", Password: "alice-pw",
			Will: &paho.WillMessage{Topic: "apps/alice/" + id, Payload: []byte("gone"), QoS: 1}, WillDelay: delay, SessionExpiry: 60, Conn: &conn})
		return conn
	}

	// Granted, both Wills go out.
	willer("now", 0).Close()
	if p := monitor.Next(); p.Topic != "apps/alice/now" {
		t.Fatalf("the immediate Will came on %s", p.Topic)
	}
	willer("later", 1).Close()
	if p := monitor.Next(); p.Topic != "apps/alice/later" {
		t.Fatalf("the delayed Will came on %s", p.Topic)
	}

	// Revoked during the delay, the delayed Will stays.
	delayed := willer("revoked-later", 2)
	now := willer("revoked-now", 0)
	delayed.Close()
	// The server counts a connection out once its Will is sent or
	// waits for its delay.
	dsstest.Eventually(t, "the server sees the connection end", func() bool {
		return metricValue(t, s, "dss_clients_connected") == 2
	})
	writePolicy(willRevokedPolicy)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	now.Close()
	monitor.NoMessage(6 * time.Second) // past the delay (counted in whole seconds) and the next sweep of delayed Wills
}

// TestAWillOnTheRequestTopicIsRefused: a Will cannot be a state store
// request (its connection, where the response would go, is gone when it
// is sent): a CONNECT with one is refused with 0x87, with and without
// authentication. Such a Will was delivered as it was to the
// subscribers of statestore/#, which no request ever reaches.
func TestAWillOnTheRequestTopicIsRefused(t *testing.T) {
	will := &paho.WillMessage{Topic: wire.RequestTopic, Payload: dsstest.Cmd("DEL", "lock"), QoS: 1}

	anon := dsstest.StartServer(t, server.Config{})
	watcher := dsstest.Dial(t, anon.Addr(), "watcher")
	watcher.Subscribe("statestore/#")
	_, ca, err := dsstest.Connect(t, anon.Addr(), "willer", dsstest.Login{Will: will})
	if err != nil || ca == nil || ca.ReasonCode != 0x87 {
		t.Fatalf("a Will on the request topic without authentication: CONNACK %+v (%v), want 0x87", ca, err)
	}
	watcher.NoMessage(100 * time.Millisecond)

	users := dsstest.StartServer(t, server.Config{Users: usersFile(t, "alice", "alice-pw"), LoginDelay: time.Millisecond})
	refusedWith(t, users.Addr(), "willer", dsstest.Login{Username: "alice", Password: "alice-pw", Will: will}, 0x87)
}
