package attach_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/attach"
	"github.com/dssio/dss/internal/cli"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// startWithHTTP starts a server attached to m with an HTTP endpoint, and
// returns it with the endpoint's address.
func startWithHTTP(t *testing.T, m *dsstest.Mosquitto, cfg server.Config) (*server.Server, string) {
	t.Helper()
	cfg.HTTPListen = "127.0.0.1:0"
	s := dsstest.StartAttached(t, m, cfg)
	return s, s.HTTPAddr()
}

// The shipped ACL (deploy/mosquitto/aclfile, with the lines dss attach
// mosquitto-acl prints for each client) keeps one client from another's
// responses and notifications, and from the requests, through a real
// Mosquitto; dss serves every client through it.
func TestMosquittoACL(t *testing.T) {
	passwd := dsstest.NeedMosquitto(t)
	passwd = filepath.Join(filepath.Dir(passwd), "mosquitto_passwd")
	if _, err := exec.LookPath("mosquitto_passwd"); err == nil {
		passwd = "mosquitto_passwd"
	}
	dir := t.TempDir()
	pwfile := filepath.Join(dir, "passwd")
	for i, user := range []string{"dss-1", "alice", "bob"} {
		args := []string{"-b", pwfile, user, "pw-" + user}
		if i == 0 {
			args = append([]string{"-c"}, args...)
		}
		if out, err := exec.Command(passwd, args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd: %v: %s", err, out)
		}
	}
	shipped, err := os.ReadFile("../../deploy/mosquitto/aclfile")
	if err != nil {
		t.Fatal(err)
	}
	var generated dsstest.Buffer
	if code := cli.Run(context.Background(), []string{"attach", "mosquitto-acl", "alice", "bob"}, cli.Stdio{In: strings.NewReader(""), Out: &generated, Err: &generated}); code != 0 {
		t.Fatalf("dss attach mosquitto-acl: %s", generated.String())
	}
	acl := filepath.Join(dir, "aclfile")
	if err := os.WriteFile(acl, []byte(string(shipped)+"\n"+generated.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{Authenticated: true, Lines: []string{
		"password_file " + pwfile, "acl_file " + acl, "use_username_as_clientid true",
	}})
	acfg := m.AttachConfig("dss-1")
	acfg.Username, acfg.Password = "dss-1", []byte("pw-dss-1")
	acfg.Presence = attach.PresenceMosquitto
	// Mosquitto's acl_file checks deliveries, not subscriptions: a client
	// that joined dss's shared subscription group would be given requests
	// it may not read, which are then lost. A group no client knows
	// keeps the requests to dss (docs/attach.md).
	acfg.Group = "dss-5b1f0c9e"
	dsstest.StartAttached(t, m, server.Config{Attach: acfg})

	login := func(user string) dsstest.Login { return dsstest.Login{Username: user, Password: "pw-" + user} }
	alice := dsstest.DialWith(t, m.Addr, "alice", login("alice"))
	alice.Subscribe(alice.ResponseTopic, wire.NotifyTopicFilter("alice"))
	if p := alice.Set([]string{"k", "v"}); string(p.Payload) != "+OK\r\n" {
		t.Fatalf("alice's SET: %q", p.Payload)
	}
	if p := alice.Request(dsstest.Cmd("KEYNOTIFY", "k")); string(p.Payload) != "+OK\r\n" {
		t.Fatalf("alice's KEYNOTIFY: %q", p.Payload)
	}

	// Mosquitto grants any subscription and applies the ACL to each
	// message it would deliver: bob, subscribed to everything he may
	// not read, receives none of it.
	bob := dsstest.DialWith(t, m.Addr, "bob", login("bob"))
	bob.Subscribe(bob.ResponseTopic)
	for _, f := range []string{
		alice.ResponseTopic,
		"clients/616C696365/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response",
		wire.NotifyTopicFilter("alice"),
		wire.ReservedPrefix + "/#",
		"clients/#",
		"#",
		wire.RequestTopic,
		"$share/dss/" + wire.RequestTopic,
	} {
		_ = bob.SubscribeCodes(f) // one at a time: Mosquitto 2.0.11 drops a client whose SUBSCRIBE lists several that the ACL denies
	}
	if p := bob.Set([]string{"k", "from bob"}); string(p.Payload) != "+OK\r\n" {
		t.Fatalf("bob's SET: %q", p.Payload)
	}
	n := alice.Next()
	if string(n.Payload) != "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$8\r\nfrom bob\r\n" {
		t.Fatalf("alice got %q on %s, want the notification of bob's SET", n.Payload, n.Topic)
	}
	if p := alice.Request(dsstest.Cmd("GET", "k")); string(p.Payload) != "$8\r\nfrom bob\r\n" {
		t.Fatalf("alice's GET: %q", p.Payload)
	}
	noneBut(t, bob, bob.ResponseTopic)
	// Nobody but dss may publish a response or a notification (Mosquitto
	// drops a client that tries).
	forger := dsstest.DialWith(t, m.Addr, "bob", login("bob"))
	for _, p := range []*paho.Publish{
		{Topic: wire.NotifyTopic("alice", []byte("k")), Payload: []byte("forged")},
		{Topic: alice.ResponseTopic, Payload: []byte("forged"), Properties: &paho.PublishProperties{CorrelationData: []byte("x")}},
	} {
		if _, err := forger.Publish(p); err != nil {
			break // dropped
		}
	}
	alice.NoMessage(300 * time.Millisecond)
	noneBut(t, bob, bob.ResponseTopic)

	// The dss client (the vendor's response topic, in hex) works under
	// the ACL as well.
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	c, err := client.Dial(ctx, client.Config{Servers: []string{m.Addr}, ClientID: "alice", Username: "alice", Password: []byte("pw-alice")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if e, found, err := c.Get(ctx, "k"); err != nil || !found || string(e.Value) != "from bob" {
		t.Fatalf("dss client GET: %q %v %v", e.Value, found, err)
	}
}

// noneBut fails the test if c received a message on another topic than
// own (where its overlapping subscriptions bring copies of its responses).
func noneBut(t *testing.T, c *dsstest.Client, own string) {
	t.Helper()
	deadline := time.After(200 * time.Millisecond)
	for {
		select {
		case p := <-c.Messages:
			if p.Topic != own {
				t.Fatalf("client %s received %q on %s", c.ID, p.Payload, p.Topic)
			}
		case <-deadline:
			return
		}
	}
}
