package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// queuedPayload is the size of the messages the queue tests publish:
// large beside what a queued message costs besides its payload and topic
// (under 2 KiB), so that a bound of n.5 payloads holds exactly n.
const queuedPayload = 100_000

// queueClient is a paho client of a session that outlives its
// connections, subscribed with QoS 1 to filter on its first connection.
// Its messages arrive on got, acknowledged unless manual.
type queueClient struct {
	t      *testing.T
	id     string
	filter string
	expiry uint32
	manual bool
	got    chan *paho.Publish
	c      *paho.Client
	// receiveMaximum, when set, is the Receive Maximum it connects with.
	receiveMaximum uint16
}

func newQueueClient(t *testing.T, id, filter string, expiry uint32, manual bool) *queueClient {
	return &queueClient{t: t, id: id, filter: filter, expiry: expiry, manual: manual, got: make(chan *paho.Publish, 64)}
}

// connect connects the session; clean starts a new one.
func (q *queueClient) connect(addr string, clean bool) {
	q.t.Helper()
	conn, err := net.DialTimeout("tcp", addr, dsstest.Timeout)
	if err != nil {
		q.t.Fatal(err)
	}
	q.t.Cleanup(func() { _ = conn.Close() })
	q.c = paho.NewClient(paho.ClientConfig{
		Conn: conn,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			q.got <- pr.Packet
			return true, nil
		}},
		EnableManualAcknowledgment: q.manual,
		PacketTimeout:              dsstest.Timeout,
	})
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	props := &paho.ConnectProperties{SessionExpiryInterval: &q.expiry}
	if q.receiveMaximum > 0 {
		props.ReceiveMaximum = &q.receiveMaximum
	}
	ca, err := q.c.Connect(ctx, &paho.Connect{ClientID: q.id, KeepAlive: 30, CleanStart: clean, Properties: props})
	if err != nil || ca.ReasonCode != 0 {
		q.t.Fatalf("connect %s: %v %+v", q.id, err, ca)
	}
	if ca.SessionPresent {
		return
	}
	if _, err := q.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: q.filter, QoS: 1}}}); err != nil {
		q.t.Fatal(err)
	}
}

// disconnect ends the connection with a DISCONNECT; the session stays.
func (q *queueClient) disconnect() {
	q.t.Helper()
	if err := q.c.Disconnect(&paho.Disconnect{}); err != nil {
		q.t.Fatal(err)
	}
}

// expect reads the next messages, which must carry the payloads want
// (by their first bytes), in that order.
func (q *queueClient) expect(want ...string) {
	q.t.Helper()
	for i, w := range want {
		select {
		case p := <-q.got:
			if got := string(p.Payload[:min(len(p.Payload), len(w))]); got != w {
				q.t.Fatalf("%s: message %d is %q, want %q", q.id, i, got, w)
			}
		case <-time.After(dsstest.Timeout):
			q.t.Fatalf("%s: no message %d (%q)", q.id, i, w)
		}
	}
}

// queuedMessage is a payload of queuedPayload bytes that begins with name.
func queuedMessage(name string) []byte {
	b := make([]byte, queuedPayload)
	copy(b, name)
	return b
}

// publishQueued publishes the named messages to topic with QoS 1.
func publishQueued(t *testing.T, pub *dsstest.Client, topic string, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := pub.Publish(&paho.Publish{QoS: 1, Topic: topic, Payload: queuedMessage(n)}); err != nil {
			t.Fatalf("publish %s: %v", n, err)
		}
	}
}

// awaitConnected waits until n clients are connected: a session whose
// connection ended is then counted as queued.
func awaitConnected(t *testing.T, s *server.Server, n float64) {
	t.Helper()
	dsstest.Eventually(t, fmt.Sprintf("%v clients connected", n), func() bool {
		return metricValue(t, s, "dss_clients_connected") == n
	})
}

// awaitMetric waits until the series has the value want: a message is
// routed after its publisher's PUBACK.
func awaitMetric(t *testing.T, s *server.Server, series string, want float64) {
	t.Helper()
	var v float64
	deadline := time.Now().Add(dsstest.Timeout)
	for {
		if v = metricValue(t, s, series); v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %v, want %v", series, v, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitQueued waits until the queued memory is what want accepts, and
// returns it.
func awaitQueued(t *testing.T, s *server.Server, what string, want func(float64) bool) float64 {
	t.Helper()
	var v float64
	dsstest.Eventually(t, what, func() bool {
		v = metricValue(t, s, queuedBytes)
		return want(v)
	})
	return v
}

const (
	queuedBytes         = "dss_mqtt_queued_bytes"
	droppedForSession   = `dss_mqtt_queued_messages_dropped_total{limit="session"}`
	droppedForAllOfThem = `dss_mqtt_queued_messages_dropped_total{limit="total"}`
)

// An offline session past its bound loses its oldest messages and keeps
// the newest, in their order; another session keeps all of its own.
func TestAnOfflineSessionKeepsItsNewestMessagesWithinItsBound(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0",
		MaxSessionQueueBytes: 4*queuedPayload + queuedPayload/2, MaxQueuedBytes: -1})
	pub := dsstest.DialNoSubscribe(t, s.Addr(), "publisher")
	full := newQueueClient(t, "full", "q/#", 60, false)
	other := newQueueClient(t, "other", "o/#", 60, false)
	full.connect(s.Addr(), true)
	other.connect(s.Addr(), true)
	full.disconnect()
	other.disconnect()
	awaitConnected(t, s, 1)

	publishQueued(t, pub, "q/a", "m1", "m2", "m3", "m4")
	publishQueued(t, pub, "o/a", "o1", "o2")
	held := awaitQueued(t, s, "6 messages queued", func(v float64) bool { return v >= 6*queuedPayload })
	if held > 6*(queuedPayload+2048) {
		t.Fatalf("%s %v for 6 messages of %d bytes", queuedBytes, held, queuedPayload)
	}
	if v := metricValue(t, s, droppedForSession); v != 0 {
		t.Fatalf("%v dropped at the bound", v)
	}
	publishQueued(t, pub, "q/a", "m5", "m6")
	awaitMetric(t, s, droppedForSession, 2)
	awaitMetric(t, s, queuedBytes, held) // 2 dropped for 2 of the same size

	full.connect(s.Addr(), false)
	full.expect("m3", "m4", "m5", "m6")
	publishQueued(t, pub, "q/a", "after")
	full.expect("after") // nothing else was kept
	other.connect(s.Addr(), false)
	other.expect("o1", "o2")
	dsstest.Eventually(t, "the delivered messages to be let go of", func() bool {
		return metricValue(t, s, queuedBytes) == 0
	})
	if v := metricValue(t, s, droppedForAllOfThem); v != 0 {
		t.Fatalf("%s %v", droppedForAllOfThem, v)
	}
}

// Past the bound of all offline sessions, the session being fed loses
// its oldest messages; a session with none to lose loses the new one;
// the others keep theirs.
func TestTheMessagesQueuedForAllOfflineSessionsAreBounded(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0",
		MaxSessionQueueBytes: -1, MaxQueuedBytes: 5*queuedPayload + queuedPayload/2})
	pub := dsstest.DialNoSubscribe(t, s.Addr(), "publisher")
	a := newQueueClient(t, "a", "a/#", 60, false)
	b := newQueueClient(t, "b", "b/#", 60, false)
	c := newQueueClient(t, "c", "c/#", 60, false)
	for _, q := range []*queueClient{a, b, c} {
		q.connect(s.Addr(), true)
		q.disconnect()
	}
	awaitConnected(t, s, 1)

	publishQueued(t, pub, "a/x", "a1", "a2", "a3")
	publishQueued(t, pub, "b/x", "b1", "b2", "b3", "b4")
	awaitMetric(t, s, droppedForAllOfThem, 2)
	publishQueued(t, pub, "c/x", "c1")
	awaitMetric(t, s, droppedForAllOfThem, 3) // nothing of c's to drop: c1 itself
	if v := metricValue(t, s, queuedBytes); v > 5*queuedPayload+queuedPayload/2 {
		t.Fatalf("%s %v past the bound", queuedBytes, v)
	}

	a.connect(s.Addr(), false)
	a.expect("a1", "a2", "a3")
	b.connect(s.Addr(), false)
	b.expect("b3", "b4")
	c.connect(s.Addr(), false)
	for _, q := range []*queueClient{a, b} {
		publishQueued(t, pub, q.id+"/x", "after")
		q.expect("after")
	}
	publishQueued(t, pub, "c/x", "after")
	c.expect("after")
	if v := metricValue(t, s, droppedForSession); v != 0 {
		t.Fatalf("%s %v", droppedForSession, v)
	}
	dsstest.Eventually(t, "the delivered messages to be let go of", func() bool {
		return metricValue(t, s, queuedBytes) == 0
	})
}

// The memory counted as queued follows every way a session's messages
// leave it: resumed (while connected nothing counts; unacknowledged when
// the connection ends again, they count again), ended by a clean start,
// expired.
func TestQueuedBytesAreLetGoOfWithTheirSession(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0"})
	pub := dsstest.DialNoSubscribe(t, s.Addr(), "publisher")
	awaitQueued := func(what string, want func(float64) bool) float64 {
		t.Helper()
		return awaitQueued(t, s, what, want)
	}
	zero := func(v float64) bool { return v == 0 }

	// Resumed without acknowledging, and gone again.
	r := newQueueClient(t, "resumed", "r/#", 60, true)
	r.connect(s.Addr(), true)
	r.disconnect()
	awaitConnected(t, s, 1)
	publishQueued(t, pub, "r/x", "r1", "r2")
	held := awaitQueued("2 messages queued", func(v float64) bool { return v >= 2*queuedPayload })
	r.connect(s.Addr(), false)
	r.expect("r1", "r2")
	awaitQueued("nothing counted while connected", zero)
	r.disconnect()
	awaitQueued("the unacknowledged messages queued again", func(v float64) bool { return v == held })
	r.manual = false
	r.connect(s.Addr(), false)
	r.expect("r1", "r2")
	awaitQueued("the acknowledged messages let go of", zero)

	// Ended by a clean start.
	e := newQueueClient(t, "ended", "e/#", 60, false)
	e.connect(s.Addr(), true)
	e.disconnect()
	awaitConnected(t, s, 2)
	publishQueued(t, pub, "e/x", "e1")
	awaitQueued("a message queued", func(v float64) bool { return v > 0 })
	e.connect(s.Addr(), true)
	awaitQueued("the ended session's message let go of", zero)

	// Expired, with a message sent and not acknowledged.
	x := newQueueClient(t, "expires", "x/#", 3, true)
	x.connect(s.Addr(), true)
	publishQueued(t, pub, "x/x", "x1")
	x.expect("x1")
	x.disconnect()
	awaitConnected(t, s, 3)
	awaitQueued("a message queued", func(v float64) bool { return v > 0 })
	awaitQueued("the expired session's message let go of", zero)
	if v := metricValue(t, s, droppedForSession) + metricValue(t, s, droppedForAllOfThem); v != 0 {
		t.Fatalf("%v messages dropped within the bounds", v)
	}
}

// publishMany publishes n QoS 1 messages to topic, 16 at a time, with
// payloads "0" to "n-1".
func publishMany(t *testing.T, pub *dsstest.Client, topic string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for k := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < n; i += 16 {
				if _, err := pub.Publish(&paho.Publish{QoS: 1, Topic: topic, Payload: []byte(strconv.Itoa(i))}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A session without a connection holds more than the broker's maximum
// of messages in flight (8,192) when its memory bound has room for them,
// and gets every one when it comes back. Past 8,192 the messages were
// dropped (1,808 of 10,000), counted under the metric of connected
// clients and logged as such, once.
func TestAnOfflineSessionHoldsWhatItsBoundHasRoomFor(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0"})
	pub := dsstest.DialNoSubscribe(t, s.Addr(), "publisher")
	many := newQueueClient(t, "many", "many/#", 60, false)
	many.connect(s.Addr(), true)
	many.disconnect()
	awaitConnected(t, s, 1)

	const n = 10_000
	publishMany(t, pub, "many/a", n)
	for _, series := range []string{droppedForSession, droppedForAllOfThem, `dss_mqtt_messages_dropped_total{reason="unacknowledged"}`} {
		if v := metricValue(t, s, series); v != 0 {
			t.Fatalf("%s %v", series, v)
		}
	}
	many.connect(s.Addr(), false)
	got := map[string]bool{}
	for len(got) < n {
		select {
		case p := <-many.got:
			got[string(p.Payload)] = true
		case <-time.After(dsstest.Timeout):
			t.Fatalf("the session got %d of its %d messages", len(got), n)
		}
	}
}

// Every queued message dropped is in a log line: a burst of drops within
// a second was reported by its first line alone.
func TestEveryQueuedDropIsLogged(t *testing.T) {
	logs := new(dsstest.Buffer)
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0", MaxSessionQueueBytes: 1000 * 1000,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	pub := dsstest.DialNoSubscribe(t, s.Addr(), "publisher")
	few := newQueueClient(t, "few", "few/#", 60, false)
	few.connect(s.Addr(), true)
	few.disconnect()
	awaitConnected(t, s, 1)
	publishMany(t, pub, "few/a", 3000)
	dropped := metricValue(t, s, droppedForSession)
	if dropped < 1000 {
		t.Fatalf("%v of 3,000 messages dropped for a bound of about 1,000", dropped)
	}
	dsstest.Eventually(t, "every drop is in a log line", func() bool {
		return float64(loggedDrops(logs.String(), "queued messages dropped")) == dropped
	})
}
