package e2e_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
)

// A message published on one node reaches the matching subscribers on
// the other two with the QoS it has on one node (the lower of the
// publish's and the subscription's), once each, in the order published,
// wildcards included; a subscriber whose filter does not match gets
// nothing.
func TestClusterPublishReachesEveryNode(t *testing.T) {
	tc := startCluster(t, 3)
	n1, n2, n3 := tc.members[0], tc.members[1], tc.members[2]
	type subscriber struct {
		c      *mqttClient
		filter string
		qos    byte
	}
	var subs []subscriber
	for i, m := range []*member{n2, n3} {
		for _, s := range []struct {
			filter string
			qos    byte
		}{{"plant/line1/temp", 0}, {"plant/line1/temp", 1}, {"plant/+/temp", 2}, {"plant/#", 1}, {"#", 2}} {
			c := connectMQTT(t, m.mqtt, fmt.Sprintf("sub-%d-%d", i, len(subs)))
			c.sub(s.filter, s.qos)
			subs = append(subs, subscriber{c, s.filter, s.qos})
		}
	}
	other := connectMQTT(t, n3.mqtt, "not-matching")
	other.sub("plant/line2/#", 2)

	pub := connectMQTT(t, n1.mqtt, "publisher")
	const perQoS = 20
	for qos := byte(0); qos <= 2; qos++ {
		for i := 0; i < perQoS; i++ {
			pub.pub(&paho.Publish{Topic: "plant/line1/temp", QoS: qos, Payload: []byte(fmt.Sprintf("%d-%d", qos, i))})
		}
	}
	for _, s := range subs {
		for qos := byte(0); qos <= 2; qos++ {
			for i := 0; i < perQoS; i++ {
				p := s.c.next()
				want := fmt.Sprintf("%d-%d", qos, i)
				if string(p.Payload) != want || p.Topic != "plant/line1/temp" {
					t.Fatalf("%s (%s QoS %d): got %q on %s, want %q", s.c.id, s.filter, s.qos, p.Payload, p.Topic, want)
				}
				if wantQoS := min(qos, s.qos); p.QoS != wantQoS {
					t.Fatalf("%s (%s QoS %d): message %s with QoS %d, want %d", s.c.id, s.filter, s.qos, want, p.QoS, wantQoS)
				}
			}
		}
	}
	for _, s := range subs {
		s.c.none(0)
	}
	other.none(500 * time.Millisecond)
}

// A message crosses nodes with what a subscriber sees on one node: the
// payload format, content type, response topic, correlation data and
// user properties (in order, repeats kept) byte for byte, a message
// expiry that counts down, the subscriber's own subscription identifiers,
// retain-as-published, and no-local for the publisher's own subscription.
func TestClusterMessagePropertiesAcrossNodes(t *testing.T) {
	tc := startCluster(t, 3)
	n1, n2, n3 := tc.members[0], tc.members[1], tc.members[2]
	// (paho reads one subscription identifier of a PUBLISH.)
	ids := connectMQTT(t, n2.mqtt, "ids")
	ids.subscribe(7, paho.SubscribeOptions{Topic: "props/#", QoS: 1})
	rap := connectMQTT(t, n3.mqtt, "rap")
	rap.subscribe(0, paho.SubscribeOptions{Topic: "props/x", QoS: 1, RetainAsPublished: true})
	plain := connectMQTT(t, n3.mqtt, "plain")
	plain.sub("props/x", 1)
	pub := connectMQTT(t, n1.mqtt, "pub")
	pub.subscribe(0, paho.SubscribeOptions{Topic: "props/x", QoS: 1, NoLocal: true})

	format := byte(1)
	expiry := uint32(60)
	user := paho.UserProperties{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}, {Key: "a", Value: "3"}, {Key: "", Value: "é"}}
	want := &paho.Publish{
		Topic: "props/x", QoS: 1, Retain: true, Payload: []byte("{\"t\":21.5}"),
		Properties: &paho.PublishProperties{
			PayloadFormat: &format, MessageExpiry: &expiry, ContentType: "application/json",
			ResponseTopic: "replies/pub", CorrelationData: []byte{0, 1, 2, 0xff}, User: user,
		},
	}
	pub.pub(want)
	check := func(c *mqttClient, retain bool, subID int) {
		t.Helper()
		p := c.next()
		if string(p.Payload) != string(want.Payload) || p.Topic != want.Topic || p.QoS != 1 || p.Retain != retain {
			t.Fatalf("%s: %s %q QoS %d retain %v", c.id, p.Topic, p.Payload, p.QoS, p.Retain)
		}
		pr := p.Properties
		if pr == nil || pr.PayloadFormat == nil || *pr.PayloadFormat != 1 || pr.ContentType != "application/json" ||
			pr.ResponseTopic != "replies/pub" || string(pr.CorrelationData) != "\x00\x01\x02\xff" {
			t.Fatalf("%s: properties %+v", c.id, pr)
		}
		if len(pr.User) != len(user) {
			t.Fatalf("%s: user properties %v, want %v", c.id, pr.User, user)
		}
		for i := range user {
			if pr.User[i] != user[i] {
				t.Fatalf("%s: user properties %v, want %v", c.id, pr.User, user)
			}
		}
		if pr.MessageExpiry == nil || *pr.MessageExpiry > 60 || *pr.MessageExpiry < 55 {
			t.Fatalf("%s: message expiry %v", c.id, pr.MessageExpiry)
		}
		got := 0
		if pr.SubscriptionIdentifier != nil {
			got = *pr.SubscriptionIdentifier
		}
		if got != subID {
			t.Fatalf("%s: subscription identifier %d, want %d", c.id, got, subID)
		}
	}
	check(ids, false, 7)
	check(rap, true, 0)
	check(plain, false, 0)
	pub.none(500 * time.Millisecond) // no-local

	// A message waiting for a session without a connection on another
	// node is sent with the time it has left.
	away := connectMQTT(t, n2.mqtt, "away", persistent(300))
	away.sub("expiring", 1)
	away.close()
	short := uint32(30)
	pub.pub(&paho.Publish{Topic: "expiring", QoS: 1, Payload: []byte("x"), Properties: &paho.PublishProperties{MessageExpiry: &short}})
	time.Sleep(2500 * time.Millisecond)
	back := connectMQTT(t, n2.mqtt, "away", persistent(300))
	p := back.next()
	if p.Properties == nil || p.Properties.MessageExpiry == nil || *p.Properties.MessageExpiry > 28 {
		t.Fatalf("a message queued 2.5 s of 30 s came with expiry %v", p.Properties.MessageExpiry)
	}
}

// Shared subscriptions pick one member across the cluster: each message to
// one member of each group, whichever nodes the members are on, and to
// members on every node over many messages.
func TestClusterSharedSubscriptionsAcrossNodes(t *testing.T) {
	tc := startCluster(t, 3)
	var members []*mqttClient
	for i, m := range tc.members {
		for j := 0; j < 2; j++ {
			c := connectMQTT(t, m.mqtt, fmt.Sprintf("worker-%d-%d", i, j))
			c.sub("$share/workers/jobs/#", 1)
			members = append(members, c)
		}
	}
	solo := connectMQTT(t, tc.members[2].mqtt, "solo")
	solo.sub("$share/audit/jobs/#", 1)
	pub := connectMQTT(t, tc.members[1].mqtt, "pub")
	const n = 120
	for i := 0; i < n; i++ {
		pub.pub(&paho.Publish{Topic: "jobs/a", QoS: 1, Payload: []byte(fmt.Sprint(i))})
	}
	seen := map[string]int{}
	perNode := map[int]int{}
	deadline := time.After(pubsubTimeout)
	for len(seen) < n {
		select {
		case <-deadline:
			t.Fatalf("%d of %d messages reached a member of the group", len(seen), n)
		default:
		}
		for i, c := range members {
			select {
			case p := <-c.msgs:
				seen[string(p.Payload)]++
				perNode[i/2]++
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	for _, c := range members {
		c.none(0)
	}
	time.Sleep(300 * time.Millisecond)
	for _, c := range members {
		select {
		case p := <-c.msgs:
			seen[string(p.Payload)]++
		default:
		}
	}
	for k, v := range seen {
		if v != 1 {
			t.Fatalf("message %s reached %d members of the group", k, v)
		}
	}
	for node := 0; node < 3; node++ {
		if perNode[node] == 0 {
			t.Fatalf("no message reached the members on node %d: %v", node+1, perNode)
		}
	}
	for i := 0; i < n; i++ {
		if p := solo.next(); string(p.Payload) != fmt.Sprint(i) {
			t.Fatalf("the only member of another group got %q, want %d", p.Payload, i)
		}
	}
}

// Retained messages live in the replicated state: set on one node, seen by
// a later subscriber on another, replaced and cleared from others, and
// still there once the node it was published on is killed (and after it
// restarts).
func TestClusterRetainedMessagesAcrossNodes(t *testing.T) {
	tc := startCluster(t, 3)
	n1, n2, n3 := tc.members[0], tc.members[1], tc.members[2]
	expect := func(m *member, filter, want string) {
		t.Helper()
		c := connectMQTT(t, m.mqtt, "check-"+m.id)
		c.sub(filter, 1)
		if want == "" {
			c.none(500 * time.Millisecond)
		} else if p := c.next(); string(p.Payload) != want || !p.Retain {
			t.Fatalf("subscriber on %s: %q retain %v, want %q retained", m.id, p.Payload, p.Retain, want)
		}
		c.close()
	}
	p1 := connectMQTT(t, n1.mqtt, "p1")
	p1.pub(&paho.Publish{Topic: "cfg/a", QoS: 1, Retain: true, Payload: []byte("one")})
	expect(n2, "cfg/a", "one") // right after the PUBACK, on another node
	expect(n3, "cfg/+", "one")
	p3 := connectMQTT(t, n3.mqtt, "p3")
	p3.pub(&paho.Publish{Topic: "cfg/a", QoS: 1, Retain: true, Payload: []byte("two")})
	expect(n1, "cfg/a", "two")
	expect(n2, "cfg/#", "two")
	p2 := connectMQTT(t, n2.mqtt, "p2")
	p2.pub(&paho.Publish{Topic: "cfg/a", QoS: 1, Retain: true, Payload: nil})
	expect(n1, "cfg/a", "")
	expect(n3, "cfg/a", "")

	p1.pub(&paho.Publish{Topic: "cfg/b", QoS: 1, Retain: true, Payload: []byte("kept")})
	n1.proc.kill()
	expect(n2, "cfg/b", "kept")
	expect(n3, "cfg/#", "kept")
	tc.start(n1)
	dsstest.EventuallyWithin(t, writeLimit, "the restarted node serves the retained message", func() bool {
		c, err := tryConnectMQTT(t, n1.mqtt, "late")
		if err != nil {
			return false
		}
		defer c.close()
		c.sub("cfg/b", 1)
		select {
		case p := <-c.msgs:
			return string(p.Payload) == "kept"
		case <-time.After(time.Second):
			return false
		}
	})
}

// A client id is connected once in the cluster: a CONNECT on another node
// takes the session over, the old connection gets DISCONNECT 0x8E, and a
// persistent session's subscriptions and the messages queued for it move
// to the new node.
func TestClusterSessionTakeoverAcrossNodes(t *testing.T) {
	tc := startCluster(t, 3)
	n1, n2, n3 := tc.members[0], tc.members[1], tc.members[2]
	pub := connectMQTT(t, n3.mqtt, "pub")

	// A connection with Clean Start 1 on another node ends the first.
	a := connectMQTT(t, n1.mqtt, "dev-a")
	a2 := connectMQTT(t, n2.mqtt, "dev-a")
	a.awaitDisconnect(0x8E)
	if a2.connack.SessionPresent {
		t.Fatal("a clean start reported a session present")
	}

	// A persistent session: subscribed on n1, its connection gone, with
	// messages queued for it there; it resumes on n2 with them.
	dev := connectMQTT(t, n1.mqtt, "dev", persistent(300))
	dev.sub("cmd/dev", 1)
	dev.sub("cmd/all/#", 2)
	dev.close()
	for i := 0; i < 5; i++ {
		pub.pub(&paho.Publish{Topic: "cmd/dev", QoS: 1, Payload: []byte(fmt.Sprint("queued-", i))})
	}
	moved := connectMQTT(t, n2.mqtt, "dev", persistent(300))
	if !moved.connack.SessionPresent {
		t.Fatal("the session resumed on another node is not present")
	}
	for i := 0; i < 5; i++ {
		if p := moved.next(); string(p.Payload) != fmt.Sprint("queued-", i) || p.QoS != 1 {
			t.Fatalf("message %d queued on the old node: got %q QoS %d", i, p.Payload, p.QoS)
		}
	}
	// Its subscriptions came with it: messages reach it on its new node,
	// and not twice.
	pub.pub(&paho.Publish{Topic: "cmd/dev", QoS: 1, Payload: []byte("after")})
	pub.pub(&paho.Publish{Topic: "cmd/all/x", QoS: 2, Payload: []byte("all")})
	if p := moved.next(); string(p.Payload) != "after" {
		t.Fatalf("got %q, want after", p.Payload)
	}
	if p := moved.next(); string(p.Payload) != "all" || p.QoS != 2 {
		t.Fatalf("got %q QoS %d, want all at QoS 2", p.Payload, p.QoS)
	}
	moved.none(500 * time.Millisecond)

	// A connected session taken over from another node.
	again := connectMQTT(t, n3.mqtt, "dev", persistent(300))
	moved.awaitDisconnect(0x8E)
	if !again.connack.SessionPresent {
		t.Fatal("a session taken over while connected is not present")
	}
	pub.pub(&paho.Publish{Topic: "cmd/dev", QoS: 1, Payload: []byte("third")})
	if p := again.next(); string(p.Payload) != "third" {
		t.Fatalf("got %q, want third", p.Payload)
	}
}

// A persistent session whose node dies keeps its subscriptions when its
// client connects to another node: what only the dead node held (messages
// queued there) is lost.
func TestClusterPersistentSessionSurvivesItsNode(t *testing.T) {
	tc := startCluster(t, 3)
	n1, n2, n3 := tc.members[0], tc.members[1], tc.members[2]
	dev := connectMQTT(t, n1.mqtt, "dev", persistent(300))
	dev.sub("cmd/dev", 1)
	dev.subscribe(0, paho.SubscribeOptions{Topic: "cfg/#", QoS: 2})
	n1.proc.kill()
	var back *mqttClient
	dsstest.EventuallyWithin(t, writeLimit, "the client reconnects to another node", func() bool {
		c, err := tryConnectMQTT(t, n2.mqtt, "dev", persistent(300))
		if err != nil {
			return false
		}
		back = c
		return true
	})
	if !back.connack.SessionPresent {
		t.Fatal("the session of a dead node is not present on another")
	}
	pub := connectMQTT(t, n3.mqtt, "pub")
	pub.pub(&paho.Publish{Topic: "cmd/dev", QoS: 1, Payload: []byte("hello")})
	pub.pub(&paho.Publish{Topic: "cfg/x", QoS: 2, Payload: []byte("cfg")})
	if p := back.next(); string(p.Payload) != "hello" {
		t.Fatalf("got %q, want hello", p.Payload)
	}
	if p := back.next(); string(p.Payload) != "cfg" || p.QoS != 2 {
		t.Fatalf("got %q QoS %d, want cfg at QoS 2", p.Payload, p.QoS)
	}
}

// A will is published cluster-wide, once: subscribers on every node get it
// when its client's connection ends without a DISCONNECT.
func TestClusterWillReachesEveryNode(t *testing.T) {
	tc := startCluster(t, 3)
	var subs []*mqttClient
	for i, m := range tc.members {
		c := connectMQTT(t, m.mqtt, fmt.Sprint("watcher-", i))
		c.sub("status/#", 1)
		subs = append(subs, c)
	}
	dev := connectMQTT(t, tc.members[0].mqtt, "dev", func(cp *paho.Connect) {
		cp.WillMessage = &paho.WillMessage{Topic: "status/dev", QoS: 1, Payload: []byte("offline")}
	})
	dev.drop()
	for _, c := range subs {
		if p := c.next(); string(p.Payload) != "offline" || p.Topic != "status/dev" {
			t.Fatalf("%s: got %q on %s", c.id, p.Payload, p.Topic)
		}
	}
	for _, c := range subs {
		c.none(500 * time.Millisecond)
	}
}

// With authentication, a client id held in the cluster by one principal is
// not taken by another on another node (CONNACK 0x85, as on one node),
// while its own principal takes it over from any node.
func TestClusterTakeoverNeedsTheSamePrincipal(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	passwd(t, users, "alice", "alice-pw")
	passwd(t, users, "bob", "bob-pw")
	tc := startCluster(t, 3, "--users", users)
	n1, n2, n3 := tc.members[0], tc.members[1], tc.members[2]
	login := func(user string, more ...func(*paho.Connect)) func(*paho.Connect) {
		return func(cp *paho.Connect) {
			cp.UsernameFlag, cp.Username = true, user
			cp.PasswordFlag, cp.Password = true, []byte(user+"-pw")
			for _, f := range more {
				f(cp)
			}
		}
	}
	dev := connectMQTT(t, n1.mqtt, "dev", login("alice", persistent(300)))
	dev.sub("cmd/dev", 1)
	c, err := tryConnectMQTT(t, n2.mqtt, "dev", login("bob", persistent(300)))
	if err == nil || c != nil && c.connack.ReasonCode != 0x85 {
		t.Fatalf("bob took alice's client id on another node: %v", err)
	}
	pub := connectMQTT(t, n3.mqtt, "bob-pub", login("bob"))
	pub.pub(&paho.Publish{Topic: "cmd/dev", QoS: 1, Payload: []byte("still alice's")})
	if p := dev.next(); string(p.Payload) != "still alice's" {
		t.Fatalf("got %q", p.Payload)
	}
	again := connectMQTT(t, n3.mqtt, "dev", login("alice", persistent(300)))
	dev.awaitDisconnect(0x8E)
	if !again.connack.SessionPresent {
		t.Fatal("alice's session did not move to her new connection")
	}
}
