package server_test

import (
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// Without a policy, authenticated clients may do everything but what
// isolation forbids.
func TestIsolationWithoutAPolicy(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{Users: usersFile(t, "alice", "a", "mallory", "m"), LoginDelay: 1})
	login := func(user, pw string) dsstest.Login { return dsstest.Login{Username: user, Password: pw} }
	alice := dsstest.DialWith(t, s.Addr(), "alice-app", login("alice", "a"))
	alice.Subscribe(alice.ResponseTopic)
	mallory := dsstest.DialWith(t, s.Addr(), "mallory-1", login("mallory", "m"))

	// Everything outside clients/ is open; other clients' topics are not.
	for filter, want := range map[string]byte{
		"#":                                 0x01,
		"plant/+/temperature":               0x01,
		"myapp/resp":                        0x01,
		alice.ResponseTopic:                 0x87,
		"clients/#":                         0x87,
		wire.NotifyTopicFilter("alice-app"): 0x87,
	} {
		if got := mallory.SubscribeCodes(filter); len(got) != 1 || got[0] != want {
			t.Errorf("subscribe %s: %#x, want %#x", filter, got, want)
		}
	}
	if code := mallory.PublishCode(&paho.Publish{Topic: "plant/1/temperature", Payload: []byte("20")}); code != 0 {
		t.Fatalf("an ordinary publish: %#x", code)
	}
	if code := mallory.PublishCode(&paho.Publish{Topic: "clients/mallory-1/x", Payload: []byte("x")}); code != 0x87 {
		t.Fatalf("a publish under clients/, even its own: %#x, want 0x87", code)
	}
	refusedWith(t, s.Addr(), "alice-app", login("mallory", "m"), 0x85)
	refusedWith(t, s.Addr(), "mallory-2", dsstest.Login{Username: "mallory", Password: "m",
		Will: &paho.WillMessage{Topic: wire.NotifyTopic("alice-app", []byte("k")), Payload: []byte("x")}}, 0x87)

	// A response topic outside clients/ that mallory subscribes to as well:
	// the response still reaches alice alone. So do her notifications.
	alice.ResponseTopic = "myapp/resp"
	alice.Subscribe("myapp/resp")
	expect(t, "alice's SET", alice.Set([]string{"k", "v"}), "+OK\r\n", "any")
	expect(t, "alice's KEYNOTIFY", alice.Request(dsstest.Cmd("KEYNOTIFY", "k")), "+OK\r\n", "")
	expect(t, "alice's SET", alice.Set([]string{"k", "w"}), "+OK\r\n", "any")
	if n := alice.Next(); n.Topic != wire.NotifyTopic("alice-app", []byte("k")) {
		t.Fatalf("alice's notification on %s", n.Topic)
	}
	if code := alice.PublishCode(&paho.Publish{Topic: "plant/sentinel", Payload: []byte("end")}); code != 0 {
		t.Fatalf("alice's publish: %#x", code)
	}
	// mallory got the ordinary publish it made itself, then the sentinel:
	// no response and no notification of alice's in between.
	for _, want := range []string{"plant/1/temperature", "plant/sentinel"} {
		if m := mallory.Next(); m.Topic != want {
			t.Fatalf("mallory received %s %q, want %s next", m.Topic, m.Payload, want)
		}
	}
}

// Without authentication nothing changes for ordinary clients, and the
// reserved topics stay closed to Wills as to publishes.
func TestWithoutAuthenticationAWillOnTheReservedTopicsIsRefused(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	refusedWith(t, s.Addr(), "x", dsstest.Login{Will: &paho.WillMessage{Topic: wire.NotifyTopic("victim", []byte("k")), Payload: []byte("x")}}, 0x87)
	c := dsstest.DialWith(t, s.Addr(), "y", dsstest.Login{Will: &paho.WillMessage{Topic: "status/y", Payload: []byte("gone")}})
	c.Subscribe("clients/other/#") // no isolation without authentication
}
