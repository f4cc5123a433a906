package server_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// floodSubscriber is a subscriber that takes 5 ms per message, with a
// receive maximum of 16: slower than the publishers.
type floodSubscriber struct {
	mu  sync.Mutex
	got map[string]bool
}

func dialFloodSubscriber(t *testing.T, addr, id, filter string) *floodSubscriber {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, dsstest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	f := &floodSubscriber{got: map[string]bool{}}
	c := paho.NewClient(paho.ClientConfig{Conn: conn, PacketTimeout: dsstest.Timeout,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			time.Sleep(5 * time.Millisecond)
			f.mu.Lock()
			f.got[string(pr.Packet.Payload)] = true
			f.mu.Unlock()
			return true, nil
		}}})
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	rm := uint16(16)
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: id, KeepAlive: 30, CleanStart: true,
		Properties: &paho.ConnectProperties{ReceiveMaximum: &rm}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// dialPublisher connects a publisher that waits for its PUBACKs as
// long as back-pressure holds them (2 minutes), longer than dsstest's
// clients do.
func dialPublisher(t *testing.T, addr, id string) *paho.Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, dsstest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn, PacketTimeout: 2 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: id, KeepAlive: 30, CleanStart: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	return c
}

func (f *floodSubscriber) missing(acked []string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range acked {
		if !f.got[p] {
			n++
		}
	}
	return n
}

// TestAcknowledgedMessagesReachConnectedSubscribers: publishers send QoS
// 1 messages as fast as they are acknowledged to subscribers slower than
// them. The messages the subscribers cannot take yet are held, and the
// publishers are slowed by not being read, so that every message a
// publisher had acknowledged reaches every subscriber, none dropped. A
// publisher that was acknowledged used to be read on, and past 8,192
// messages waiting for a subscriber the rest were dropped (1,205 of
// 377,481 with 64 publishers and 64 subscribers). DSS_LONG=1 floods 64
// and 64 for 10 s; CI, 8 and 8 for 4 s.
func TestAcknowledgedMessagesReachConnectedSubscribers(t *testing.T) {
	pubs, subs, flood := 8, 8, 4*time.Second
	if dsstest.Long() {
		pubs, subs, flood = 64, 64, 10*time.Second
	}
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0"})
	var subscribers []*floodSubscriber
	for i := range subs {
		subscribers = append(subscribers, dialFloodSubscriber(t, s.Addr(), fmt.Sprintf("sub-%d", i), "flood/#"))
	}

	legit := dsstest.Dial(t, s.Addr(), "legit")
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	var failed atomic.Value
	stop := time.Now().Add(flood)
	for i := range pubs {
		pub := dialPublisher(t, s.Addr(), fmt.Sprintf("pub-%d", i))
		// Each publisher has 16 messages in flight at once.
		for k := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; time.Now().Before(stop); j++ {
					payload := fmt.Sprintf("%d-%d-%d", i, k, j)
					// Slowed to the subscribers' pace, a publish may
					// wait for its PUBACK longer than dsstest's timeout.
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					pr, err := pub.Publish(ctx, &paho.Publish{Topic: fmt.Sprintf("flood/%d", i), QoS: 1, Payload: []byte(payload)})
					cancel()
					if err != nil || pr.ReasonCode != 0 {
						failed.Store(fmt.Sprintf("publish %s: %+v %v", payload, pr, err))
						return
					}
					mu.Lock()
					acked = append(acked, payload)
					mu.Unlock()
				}
			}()
		}
	}
	// A client beside the flood is served.
	start := time.Now()
	expect(t, "SET", legit.Set([]string{"k", "v"}), "+OK\r\n", "any")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a request took %v beside the flood", took)
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		t.Fatal(f)
	}

	dropped := func() float64 {
		n := 0.0
		for _, series := range []string{
			`dss_mqtt_messages_dropped_total{reason="unacknowledged"}`, `dss_mqtt_messages_dropped_total{reason="pending_writes"}`,
			`dss_mqtt_queued_messages_dropped_total{limit="session"}`, `dss_mqtt_queued_messages_dropped_total{limit="total"}`,
		} {
			n += metricValue(t, s, series)
		}
		return n
	}
	dsstest.EventuallyWithin(t, 2*time.Minute, "every subscriber has every acknowledged message", func() bool {
		if d := dropped(); d > 0 {
			t.Fatalf("%v messages dropped for connected subscribers; %d acknowledged to the publishers", d, len(acked))
		}
		for _, f := range subscribers {
			if f.missing(acked) > 0 {
				return false
			}
		}
		return true
	})
	t.Logf("%d publishers, %d subscribers, %v: %d messages acknowledged, each delivered %d times", pubs, subs, flood, len(acked), subs)
	if !strings.Contains(dsstest.Metrics(t, s.HTTPAddr()), "dss_mqtt_held_bytes") {
		t.Error("no dss_mqtt_held_bytes")
	}
}

// TestASubscriberThatStopsAcknowledgingHoldsNobody: a subscriber that
// takes 10 messages and acknowledges none slows its publisher for a few
// seconds at most; its messages are then held up to
// --max-queued-bytes-per-session and dropped past it, counted and
// logged as for a session without a connection, while a subscriber
// beside it gets every message.
func TestASubscriberThatStopsAcknowledgingHoldsNobody(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0", MaxSessionQueueBytes: 1 << 20})
	staller := newQueueClient(t, "staller", "s/#", 0, true) // acknowledges nothing
	staller.receiveMaximum = 10
	staller.got = make(chan *paho.Publish, 100)
	staller.connect(s.Addr(), true)
	good := newQueueClient(t, "good", "s/#", 0, false)
	good.got = make(chan *paho.Publish, 100_000)
	good.connect(s.Addr(), true)
	pub := dsstest.DialNoSubscribe(t, s.Addr(), "publisher")

	const n = 3000
	start := time.Now()
	publishMany(t, pub, "s/a", n)
	if took := time.Since(start); took > 60*time.Second {
		t.Fatalf("%d messages took %v to publish beside a subscriber that acknowledges nothing", n, took)
	}
	got := map[string]bool{}
	for len(got) < n {
		select {
		case p := <-good.got:
			got[string(p.Payload)] = true
		case <-time.After(dsstest.Timeout):
			t.Fatalf("the other subscriber got %d of %d messages", len(got), n)
		}
	}
	if v := metricValue(t, s, droppedForSession); v < n/2 {
		t.Fatalf("%v of %d messages dropped for a subscriber that acknowledged none, past its bound of about 1,000", v, n)
	}
}
