package server_test

import (
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// attackPolicy grants two applications (users alice and bob) their own
// keys and topics and a lock key they share; mallory may connect, read
// one key and use a few filters; monitor may subscribe to everything;
// certificates of plant-1 may read one binary key.
const attackPolicy = `
rules:
  - principals:
      usernames: [alice, bob]
    brokerResources:
      - method: Connect
      - method: Publish
        topics: ["apps/{principal.username}/#"]
      - method: Subscribe
        topics: ["apps/{principal.username}/#"]
    stateStoreResources:
      - method: ReadWrite
        keyType: Pattern
        keys: ["app/{principal.username}/*", "shared-lock"]
  - principals:
      usernames: [mallory]
    brokerResources:
      - method: Connect
      - method: Publish
        topics: ["#"]
      - method: Subscribe
        topics: ["a", "a/+/c", "x/#"]
    stateStoreResources:
      - method: Read
        keyType: String
        keys: ["public"]
  - principals:
      usernames: [monitor]
    brokerResources:
      - method: Connect
      - method: Subscribe
        topics: ["#"]
  - principals:
      attributes: [{organization: plant-1}]
    brokerResources:
      - method: Connect
    stateStoreResources:
      - method: Read
        keyType: Binary
        keys: ["AAEC/w=="]
`

// attackFixture is a server with TLS, users, client certificates and
// attackPolicy, and its CA.
type attackFixture struct {
	s      *server.Server
	ca     *dsstest.CA
	policy string
}

func newAttackFixture(t *testing.T) *attackFixture {
	t.Helper()
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(attackPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	s, ca := tlsServer(t, server.Config{
		Users:          usersFile(t, "alice", "alice-pw", "bob", "bob-pw", "mallory", "mallory-pw", "monitor", "monitor-pw"),
		Policy:         policy,
		TLSClientCA:    "-",
		ReloadInterval: -1,
	})
	return &attackFixture{s: s, ca: ca, policy: policy}
}

// dial connects user over TLS as client id and subscribes it to its
// response topic.
func (f *attackFixture) dial(t *testing.T, id, user string) *dsstest.Client {
	t.Helper()
	c := dsstest.DialWith(t, f.s.TLSAddr(), id, dsstest.Login{TLS: f.ca.ClientTLS(), Username: user, Password: user + "-pw"})
	c.Subscribe(c.ResponseTopic)
	return c
}

func notAuthorized(t *testing.T, what string, p *paho.Publish) {
	t.Helper()
	if want := "-ERR not authorized\r\n"; string(p.Payload) != want {
		t.Fatalf("%s: %q, want %q", what, p.Payload, want)
	}
}

func TestAttacksOnAServerWithTLSUsersAndAPolicy(t *testing.T) {
	f := newAttackFixture(t)
	addr := f.s.TLSAddr()
	alice := f.dial(t, "alice-app", "alice")
	expect(t, "alice's SET", alice.Set([]string{"app/alice/setpoint", "21.5"}), "+OK\r\n", "any")
	expect(t, "alice's KEYNOTIFY", alice.Request(dsstest.Cmd("KEYNOTIFY", "app/alice/setpoint")), "+OK\r\n", "")

	t.Run("logins", func(t *testing.T) {
		refusedWith(t, addr, "x1", dsstest.Login{TLS: f.ca.ClientTLS()}, 0x87)
		refusedWith(t, addr, "x2", dsstest.Login{TLS: f.ca.ClientTLS(), Username: "alice", Password: "guess"}, 0x86)
		refusedWith(t, addr, "x3", dsstest.Login{TLS: f.ca.ClientTLS(), Username: "eve", Password: "alice-pw"}, 0x86)
		// A certificate of plant-2 authenticates, but no rule grants it
		// Connect.
		plant2 := f.ca.Client("plant-2", pkix.Name{CommonName: "dev", Organization: []string{"plant-2"}})
		refusedWith(t, addr, "x4", dsstest.Login{TLS: f.ca.ClientTLS(plant2)}, 0x87)
		// alice's client id, taken by another principal, while she is
		// connected.
		refusedWith(t, addr, "alice-app", dsstest.Login{TLS: f.ca.ClientTLS(), Username: "mallory", Password: "mallory-pw"}, 0x85)
	})

	mallory := f.dial(t, "mallory-1", "mallory")

	t.Run("keys outside the grant", func(t *testing.T) {
		notAuthorized(t, "GET", mallory.Request(dsstest.Cmd("GET", "app/alice/setpoint")))
		notAuthorized(t, "SET", mallory.Set([]string{"app/alice/setpoint", "99"}))
		notAuthorized(t, "DEL", mallory.Request(dsstest.Cmd("DEL", "app/alice/setpoint")))
		notAuthorized(t, "VDEL", mallory.Request(dsstest.Cmd("VDEL", "app/alice/setpoint", "21.5")))
		notAuthorized(t, "KEYNOTIFY", mallory.Request(dsstest.Cmd("KEYNOTIFY", "app/alice/setpoint")))
		notAuthorized(t, "SET of a readable key", mallory.Set([]string{"public", "x"}))
		expect(t, "GET of the readable key", mallory.Request(dsstest.Cmd("GET", "public")), "$-1\r\n", "")
		// The key is unchanged: alice reads her value, and was told of no
		// change.
		expect(t, "alice's GET", alice.Request(dsstest.Cmd("GET", "app/alice/setpoint")), "$4\r\n21.5\r\n", "any")
	})

	t.Run("subscriptions to others' topics", func(t *testing.T) {
		for filter, want := range map[string]byte{
			"#":                 0x87,
			alice.ResponseTopic: 0x87,
			"clients/+/services/statestore/_any_/command/invoke/response": 0x87,
			wire.NotifyTopicFilter("alice-app"):                           0x87,
			wire.ReservedPrefix + "/#":                                    0x87,
			"$share/g/" + alice.ResponseTopic:                             0x87,
			mallory.ResponseTopic:                                         0x01, // its own
			wire.NotifyTopicFilter("mallory-1"):                           0x01,
		} {
			if got := mallory.SubscribeCodes(filter); len(got) != 1 || got[0] != want {
				t.Errorf("subscribe %s: %#x, want %#x", filter, got, want)
			}
		}
	})

	t.Run("filters that widen a grant", func(t *testing.T) {
		for filter, want := range map[string]byte{
			"a":     0x01,
			"a/b":   0x87, // a grant of a is not one of a/b
			"a/#":   0x87,
			"+":     0x87,
			"a/x/c": 0x01,
			"a/+/c": 0x01,
			"a/+/+": 0x87,
			"a/#/c": 0x8f, // not a filter at all
			"x":     0x01, // x/# includes x
			"x/y/#": 0x01,
		} {
			if got := mallory.SubscribeCodes(filter); len(got) != 1 || got[0] != want {
				t.Errorf("subscribe %s: %#x, want %#x", filter, got, want)
			}
		}
	})

	t.Run("publishes on a notification topic", func(t *testing.T) {
		notify := wire.NotifyTopic("alice-app", []byte("app/alice/setpoint"))
		forged := []byte("*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\n99\r\n")
		if code := mallory.PublishCode(&paho.Publish{Topic: notify, Payload: forged}); code != 0x87 {
			t.Errorf("direct publish: PUBACK %#x, want 0x87", code)
		}
		if code := mallory.PublishCode(&paho.Publish{Topic: notify, Payload: forged, Retain: true}); code != 0x87 {
			t.Errorf("retained publish: PUBACK %#x, want 0x87", code)
		}
		if code := mallory.PublishCode(&paho.Publish{Topic: alice.ResponseTopic, Payload: []byte("+OK\r\n")}); code != 0x87 {
			t.Errorf("publish on alice's response topic: PUBACK %#x, want 0x87", code)
		}
		will := &paho.WillMessage{Topic: notify, Payload: forged, QoS: 1, Retain: true}
		refusedWith(t, addr, "mallory-will", dsstest.Login{TLS: f.ca.ClientTLS(), Username: "mallory", Password: "mallory-pw", Will: will}, 0x87)
		// Nothing reached alice: a real change is the next thing she hears.
		expect(t, "alice's SET", alice.Set([]string{"app/alice/setpoint", "22"}), "+OK\r\n", "any")
		n := alice.Next()
		if n.Topic != notify || string(n.Payload) != "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\n22\r\n" {
			t.Fatalf("alice's first notification: %s %q, want the SET of 22", n.Topic, n.Payload)
		}
	})

	t.Run("a subscription to everything sees nobody's responses or notifications", func(t *testing.T) {
		monitor := f.dial(t, "monitor-1", "monitor")
		monitor.Subscribe("#")
		expect(t, "alice's GET", alice.Request(dsstest.Cmd("GET", "app/alice/setpoint")), "$2\r\n22\r\n", "any")
		expect(t, "alice's SET", alice.Set([]string{"app/alice/setpoint", "23"}), "+OK\r\n", "any")
		if n := alice.Next(); string(n.Payload) != "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\n23\r\n" {
			t.Fatalf("alice's notification: %q", n.Payload)
		}
		// A message after them: whatever monitor was sent before it, it
		// has by the time it has this one.
		if code := alice.PublishCode(&paho.Publish{Topic: "apps/alice/sentinel", Payload: []byte("end")}); code != 0 {
			t.Fatalf("alice's publish: %#x", code)
		}
		if m := monitor.Next(); m.Topic != "apps/alice/sentinel" {
			t.Fatalf("monitor received %s %q before the sentinel", m.Topic, m.Payload)
		}
	})

	t.Run("two applications share a lock key", func(t *testing.T) {
		bob := f.dial(t, "bob-app", "bob")
		expect(t, "alice takes the lock", alice.Set([]string{"shared-lock", "alice", "NX", "PX", "60000"}), "+OK\r\n", "any")
		expect(t, "bob finds it taken", bob.Set([]string{"shared-lock", "bob", "NX", "PX", "60000"}), ":-1\r\n", "any")
		expect(t, "bob reads the holder", bob.Request(dsstest.Cmd("GET", "shared-lock")), "$5\r\nalice\r\n", "any")
		notAuthorized(t, "bob reads alice's keys", bob.Request(dsstest.Cmd("GET", "app/alice/setpoint")))
		notAuthorized(t, "mallory takes the lock", mallory.Set([]string{"shared-lock", "mallory"}))
	})

	t.Run("a certificate's binary key", func(t *testing.T) {
		line1 := f.ca.Client("line-1", pkix.Name{CommonName: "line-1", Organization: []string{"plant-1"}})
		c := dsstest.DialWith(t, addr, "line-1", dsstest.Login{TLS: f.ca.ClientTLS(line1)})
		c.Subscribe(c.ResponseTopic)
		expect(t, "GET of the binary key", c.Request(dsstest.Cmd("GET", "\x00\x01\x02\xff")), "$-1\r\n", "")
		notAuthorized(t, "SET of the binary key", c.Set([]string{"\x00\x01\x02\xff", "v"}))
		notAuthorized(t, "GET of another key", c.Request(dsstest.Cmd("GET", "\x00\x01\x02")))
	})

	// The legitimate client kept working beside the attacker throughout.
	expect(t, "alice's last GET", alice.Request(dsstest.Cmd("GET", "app/alice/setpoint")), "$2\r\n23\r\n", "any")
	select {
	case d := <-alice.Disconnects:
		t.Fatalf("alice was disconnected: %#x", d.ReasonCode)
	default:
	}
}

func TestAClientCertificateIsRequiredWithoutPasswords(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(attackPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	s, ca := tlsServer(t, server.Config{Policy: policy, TLSClientCA: "-"})
	if _, ca2, err := dsstest.Connect(t, s.TLSAddr(), "no-cert", dsstest.Login{TLS: ca.ClientTLS(), Username: "alice", Password: "alice-pw"}); err == nil {
		t.Fatalf("no client certificate: CONNACK %#x, want the handshake refused", ca2.ReasonCode)
	}
	line1 := ca.Client("line-1", pkix.Name{CommonName: "line-1", Organization: []string{"plant-1"}})
	dsstest.DialWith(t, s.TLSAddr(), "line-1", dsstest.Login{TLS: ca.ClientTLS(line1)})
}

func TestAPolicyChangeEndsOnlyTheConnectionsItNoLongerGrants(t *testing.T) {
	f := newAttackFixture(t)
	alice := f.dial(t, "alice-app", "alice")
	bob := f.dial(t, "bob-app", "bob")
	expect(t, "alice watches the lock", alice.Request(dsstest.Cmd("KEYNOTIFY", "shared-lock")), "+OK\r\n", "")

	// A policy that does not parse is refused with its line, and the old
	// one stays.
	if err := os.WriteFile(f.policy, []byte("rules:\n  - principals: {usernames: [alice]}\n    brokerResources:\n      - method: Pubish\n        topics: [x]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := f.s.Reload()
	if err == nil || err.Error() != f.policy+`:4: method "Pubish": want Connect, Publish or Subscribe` {
		t.Fatalf("Reload of a broken policy: %v", err)
	}
	expect(t, "alice's SET under the old policy", alice.Set([]string{"shared-lock", "a"}), "+OK\r\n", "any")
	if n := alice.Next(); n.Topic != wire.NotifyTopic("alice-app", []byte("shared-lock")) {
		t.Fatalf("alice's notification on %s", n.Topic)
	}

	// The lock key is no longer shared: alice, who watches it, is
	// disconnected with 0x87; bob, who holds nothing of it, goes on, under
	// the new grants at once.
	narrowed := `
rules:
  - principals:
      usernames: [alice, bob]
    brokerResources:
      - method: Connect
    stateStoreResources:
      - method: ReadWrite
        keyType: Pattern
        keys: ["app/{principal.username}/*"]
`
	if err := os.WriteFile(f.policy, []byte(narrowed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Reload(); err != nil {
		t.Fatal(err)
	}
	alice.AwaitDisconnect(0x87, "watches a key no longer granted")
	notAuthorized(t, "bob's SET of the lock", bob.Set([]string{"shared-lock", "b"}))
	expect(t, "bob's own key", bob.Set([]string{"app/bob/x", "1"}), "+OK\r\n", "any")
	select {
	case d := <-bob.Disconnects:
		t.Fatalf("bob was disconnected: %#x", d.ReasonCode)
	default:
	}
}
