package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

const (
	notifyDelete = "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n"
)

func notifySet(value string) string {
	return "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$" + itoa(len(value)) + "\r\n" + value + "\r\n"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// watcher connects a client, subscribes it to its notifications and
// registers it for keys.
func watcher(t *testing.T, s *server.Server, id string, keys ...string) *dsstest.Client {
	t.Helper()
	w := dsstest.Dial(t, s.Addr(), id)
	w.Subscribe(wire.NotifyTopicFilter(id))
	for _, k := range keys {
		expect(t, "KEYNOTIFY", w.Request(dsstest.Cmd("KEYNOTIFY", k)), "+OK\r\n", "")
	}
	return w
}

// expectNotification checks the next notification's topic, payload and
// __ts.
func expectNotification(t *testing.T, w *dsstest.Client, key, payload, version string) {
	t.Helper()
	p := w.Next()
	if want := wire.NotifyTopic(w.ID, []byte(key)); p.Topic != want {
		t.Fatalf("notification on %q, want %q", p.Topic, want)
	}
	if string(p.Payload) != payload {
		t.Fatalf("notification payload %q, want %q", p.Payload, payload)
	}
	got, ok := dsstest.UserProperty(p, wire.PropTimestamp)
	if !ok || (version != "any" && got != version) {
		t.Fatalf("notification __ts %q (%v), want %q", got, ok, version)
	}
	if p.QoS != 1 {
		t.Fatalf("notification QoS %d", p.QoS)
	}
}

func TestKeyNotify(t *testing.T) {
	s, writer := start(t)
	w := watcher(t, s, "client-id1", "SOMEKEY")
	if got := wire.NotifyTopic("client-id1", []byte("SOMEKEY")); got != "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/636C69656E742D696431/command/notify/534F4D454B4559" {
		t.Fatalf("topic %q", got)
	}
	v1 := expect(t, "SET", writer.Set([]string{"SOMEKEY", "abc"}), "+OK\r\n", "any")
	expectNotification(t, w, "SOMEKEY", notifySet("abc"), v1.String())
	v2 := expect(t, "SET", writer.Set([]string{"SOMEKEY", ""}), "+OK\r\n", "any")
	expectNotification(t, w, "SOMEKEY", notifySet(""), v2.String())

	// A deletion carries a version of its own, newer than the value's.
	writer.Request(dsstest.Cmd("DEL", "SOMEKEY"))
	p := w.Next()
	if string(p.Payload) != notifyDelete {
		t.Fatalf("DEL notification %q", p.Payload)
	}
	writer.Set([]string{"SOMEKEY", "x"})
	expectNotification(t, w, "SOMEKEY", notifySet("x"), "any")
	writer.Request(dsstest.Cmd("VDEL", "SOMEKEY", "x"))
	expectNotification(t, w, "SOMEKEY", notifyDelete, "any")

	// Nothing for refused or no-op requests, nor for other keys.
	writer.Request(dsstest.Cmd("VDEL", "SOMEKEY", "x"))
	writer.Request(dsstest.Cmd("DEL", "SOMEKEY"))
	writer.Set([]string{"OTHER", "x"})
	w.NoMessage(100 * time.Millisecond)
}

func TestKeyNotifyBinaryKey(t *testing.T) {
	s, writer := start(t)
	key := "\x00k\r\n\xff"
	w := watcher(t, s, "bin", key)
	writer.Set([]string{key, "v\r\n"})
	expectNotification(t, w, key, notifySet("v\r\n"), "any")
}

func TestKeyNotifyTwiceAndStop(t *testing.T) {
	s, writer := start(t)
	w := watcher(t, s, "w", "k", "k") // twice: still +OK, one registration
	writer.Set([]string{"k", "1"})
	expectNotification(t, w, "k", notifySet("1"), "any")
	w.NoMessage(50 * time.Millisecond)

	expect(t, "STOP", w.Request(dsstest.Cmd("KEYNOTIFY", "k", "STOP")), "+OK\r\n", "")
	expect(t, "STOP again", w.Request(dsstest.Cmd("KEYNOTIFY", "k", "stop")), ":0\r\n", "")
	writer.Set([]string{"k", "2"})
	w.NoMessage(100 * time.Millisecond)
}

func TestNotificationsInApplyOrder(t *testing.T) {
	s, writer := start(t)
	w := watcher(t, s, "w", "k")
	var pending []chan *paho.Publish
	for i := 0; i < 200; i++ {
		pending = append(pending, writer.Send(dsstest.Cmd("SET", "k", itoa(i)), ts(dsstest.Now())))
	}
	var versions []string
	for _, ch := range pending {
		v, _ := dsstest.UserProperty(writer.Await(ch), wire.PropTimestamp)
		versions = append(versions, v)
	}
	for i := 0; i < 200; i++ {
		expectNotification(t, w, "k", notifySet(itoa(i)), versions[i])
	}
}

func TestSeveralWatchers(t *testing.T) {
	s, writer := start(t)
	a := watcher(t, s, "a", "k")
	b := watcher(t, s, "b", "k", "j")
	writer.Set([]string{"k", "v"})
	expectNotification(t, a, "k", notifySet("v"), "any")
	expectNotification(t, b, "k", notifySet("v"), "any")
	writer.Set([]string{"j", "w"})
	expectNotification(t, b, "j", notifySet("w"), "any")
	a.NoMessage(50 * time.Millisecond)
}

func TestRegistrationsEndWithTheConnection(t *testing.T) {
	s, writer := start(t)
	w := watcher(t, s, "w", "k")
	_ = w.Paho.Disconnect(&paho.Disconnect{})

	// The same client id comes back with a persistent-looking session and
	// subscribes again, but does not register: it hears nothing.
	again := dsstest.Dial(t, s.Addr(), "w")
	again.Subscribe(wire.NotifyTopicFilter("w"))
	writer.Set([]string{"k", "v"})
	again.NoMessage(150 * time.Millisecond)

	expect(t, "register again", again.Request(dsstest.Cmd("KEYNOTIFY", "k")), "+OK\r\n", "")
	writer.Set([]string{"k", "w"})
	expectNotification(t, again, "k", notifySet("w"), "any")
}

func TestSessionTakeoverKeepsTheNewRegistrations(t *testing.T) {
	s := startServer(t, server.Config{HTTPListen: "127.0.0.1:0"})
	writer := dsstest.Dial(t, s.Addr(), "writer")
	old := watcher(t, s, "same-id", "k")
	_ = old
	// A new connection with the same client id takes the session over and
	// registers at once; the old connection's end must not drop it.
	taker := watcher(t, s, "same-id", "k")
	dsstest.Eventually(t, "the old connection's registration is dropped", func() bool {
		return metricValue(t, s, "dss_keynotify_registrations") < 2
	})
	writer.Set([]string{"k", "v"})
	expectNotification(t, taker, "k", notifySet("v"), "any")
}

// TestNotificationWithoutSubscription registers without subscribing to the
// notification topic, as the vendor's Go client does: the notifications
// come all the same, to that connection (PROTOCOL.md, section 8).
func TestNotificationWithoutSubscription(t *testing.T) {
	s, writer := start(t)
	w := dsstest.Dial(t, s.Addr(), "w") // registers but never subscribes
	expect(t, "KEYNOTIFY", w.Request(dsstest.Cmd("KEYNOTIFY", "k")), "+OK\r\n", "")
	v := expect(t, "SET", writer.Set([]string{"k", "v"}), "+OK\r\n", "any")
	expectNotification(t, w, "k", notifySet("v"), v.String())
	writer.Request(dsstest.Cmd("DEL", "k"))
	expectNotification(t, w, "k", notifyDelete, "any")
	w.NoMessage(100 * time.Millisecond)
}

// TestNotificationsReachOnlyTheRegisteringConnection subscribes another
// client to every notification topic and to the watcher's own: it hears
// nothing, and the watcher, subscribed twice through overlapping filters,
// hears each change once, through its subscription, with its identifier.
func TestNotificationsReachOnlyTheRegisteringConnection(t *testing.T) {
	s, writer := start(t)
	spy := dsstest.Dial(t, s.Addr(), "spy")
	spy.Subscribe(wire.ReservedPrefix+"/#", wire.NotifyTopicFilter("w"))

	w := dsstest.Dial(t, s.Addr(), "w")
	id := 42
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	if _, err := w.Paho.Subscribe(ctx, &paho.Subscribe{
		Properties:    &paho.SubscribeProperties{SubscriptionIdentifier: &id},
		Subscriptions: []paho.SubscribeOptions{{Topic: wire.NotifyTopicFilter("w"), QoS: 1}},
	}); err != nil {
		t.Fatal(err)
	}
	w.Subscribe(wire.ReservedPrefix + "/#")
	expect(t, "KEYNOTIFY", w.Request(dsstest.Cmd("KEYNOTIFY", "k")), "+OK\r\n", "")

	writer.Set([]string{"k", "v"})
	p := w.Next()
	if p.Topic != wire.NotifyTopic("w", []byte("k")) || string(p.Payload) != notifySet("v") {
		t.Fatalf("notification on %q: %q", p.Topic, p.Payload)
	}
	if p.Properties.SubscriptionIdentifier == nil || *p.Properties.SubscriptionIdentifier != id {
		t.Fatalf("subscription identifier %v, want %d", p.Properties.SubscriptionIdentifier, id)
	}
	w.NoMessage(100 * time.Millisecond)
	spy.NoMessage(50 * time.Millisecond)
}

// TestNotificationTakesTheSubscriptionsQoS subscribes to the notification
// topic with QoS 0: the notification goes out through that subscription,
// at QoS 0.
func TestNotificationTakesTheSubscriptionsQoS(t *testing.T) {
	s, writer := start(t)
	w := dsstest.Dial(t, s.Addr(), "w")
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	if _, err := w.Paho.Subscribe(ctx, &paho.Subscribe{
		Subscriptions: []paho.SubscribeOptions{{Topic: wire.NotifyTopicFilter("w"), QoS: 0}},
	}); err != nil {
		t.Fatal(err)
	}
	expect(t, "KEYNOTIFY", w.Request(dsstest.Cmd("KEYNOTIFY", "k")), "+OK\r\n", "")
	writer.Set([]string{"k", "v"})
	if p := w.Next(); p.QoS != 0 || string(p.Payload) != notifySet("v") {
		t.Fatalf("notification QoS %d payload %q, want QoS 0", p.QoS, p.Payload)
	}
}

// TestLeasedLockWaitsForItsDeletionWithoutSubscribing walks the vendor's
// Go client's leased lock: it registers for the lock's key without
// subscribing to its notification topic, fails to take the lock while
// another holder has it, waits for the DELETE notification and then takes
// it. Against a broker that delivers notifications only through
// subscriptions the wait never ends.
func TestLeasedLockWaitsForItsDeletionWithoutSubscribing(t *testing.T) {
	s, holder := start(t)
	expect(t, "holder takes the lock", holder.Set([]string{"lock", "holder", "NX", "PX", "10000"}), "+OK\r\n", "any")

	waiter := dsstest.Dial(t, s.Addr(), "waiter") // subscribes to its responses only
	expect(t, "KEYNOTIFY", waiter.Request(dsstest.Cmd("KEYNOTIFY", "lock")), "+OK\r\n", "")
	expect(t, "waiter tries", waiter.Set([]string{"lock", "waiter", "NX", "PX", "10000"}), ":-1\r\n", "any")

	expect(t, "holder releases", holder.Request(dsstest.Cmd("VDEL", "lock", "holder")), ":1\r\n", "any")
	expectNotification(t, waiter, "lock", notifyDelete, "any")
	expect(t, "waiter takes the lock", waiter.Set([]string{"lock", "waiter", "NX", "PX", "10000"}), "+OK\r\n", "any")
}
