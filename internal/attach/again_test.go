package attach

import (
	"errors"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho/queue"
	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/wire"
)

// newUnconnected returns an attacher with a real engine that is not
// connected to a broker: what it publishes stays in its queue.
func newUnconnected(t *testing.T) *Attacher {
	t.Helper()
	a, err := New(Config{Broker: "mqtt://127.0.0.1:1883", ClientID: "dss-test", MaxKeySize: 1024, MaxValueSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	n := engine.New(engine.Config{Clock: hlc.NewClock("n", time.Now), Notifier: a.Notifier()})
	n.Start()
	t.Cleanup(func() { _ = n.Close() })
	a.store = n
	return a
}

// request returns a request from the broker, with DUP set when dup.
func request(corr string, dup bool, args ...string) *paho.Publish {
	payload := []byte{}
	payload = append(payload, '*', byte('0'+len(args)), '\r', '\n')
	for _, a := range args {
		payload = append(payload, '$', byte('0'+len(a)), '\r', '\n')
		payload = append(payload, a...)
		payload = append(payload, '\r', '\n')
	}
	return paho.PublishFromPacketPublish(&packets.Publish{
		QoS: 1, Duplicate: dup, Topic: wire.RequestTopic, Payload: payload, PacketID: 1,
		Properties: &packets.Properties{
			ResponseTopic:   "clients/me/services/statestore/_any_/command/invoke/response",
			CorrelationData: []byte(corr),
			User:            []packets.User{{Key: wire.PropTimestamp, Value: "001700000000000:00000:me"}},
		},
	})
}

// drain returns the messages queued for the broker.
func drain(t *testing.T, a *Attacher) []*packets.Publish {
	t.Helper()
	var out []*packets.Publish
	for {
		e, err := a.queue.Peek()
		if errors.Is(err, queue.ErrEmpty) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Reader()
		if err != nil {
			t.Fatal(err)
		}
		cp, err := packets.ReadPacket(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cp.Content.(*packets.Publish))
		if err := e.Remove(); err != nil {
			t.Fatal(err)
		}
	}
}

func awaitResponses(t *testing.T, a *Attacher, n int) []*packets.Publish {
	t.Helper()
	var out []*packets.Publish
	deadline := time.Now().Add(10 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		out = append(out, drain(t, a)...)
		time.Sleep(5 * time.Millisecond)
	}
	return out
}

// A write that arrives again is carried out once: redelivered by the
// broker (DUP), it is not answered again; sent again by its client, it
// gets the first response again.
func TestWriteArrivingAgainIsCarriedOutOnce(t *testing.T) {
	a := newUnconnected(t)
	a.handleRequest(request("c1", false, "SET", "k", "v"))
	first := awaitResponses(t, a, 1)
	if len(first) != 1 || string(first[0].Payload) != "+OK\r\n" {
		t.Fatalf("responses %v", first)
	}
	a.handleRequest(request("c1", true, "SET", "k", "v")) // the broker's redelivery
	a.handleRequest(request("c1", false, "SET", "k", "v"))
	again := awaitResponses(t, a, 1)
	time.Sleep(50 * time.Millisecond)
	again = append(again, drain(t, a)...)
	if len(again) != 1 {
		t.Fatalf("%d responses to the redelivery and the retry, want 1 (the retry's)", len(again))
	}
	v1, v2 := userProp(first[0], wire.PropTimestamp), userProp(again[0], wire.PropTimestamp)
	if v1 == "" || v1 != v2 || string(again[0].Payload) != "+OK\r\n" {
		t.Fatalf("first answer %q %s, again %q %s", first[0].Payload, v1, again[0].Payload, v2)
	}
	// The store holds the first write's version: it was applied once.
	a.handleRequest(request("c2", false, "GET", "k"))
	get := awaitResponses(t, a, 1)
	if len(get) != 1 || userProp(get[0], wire.PropTimestamp) != v1 {
		t.Fatalf("GET after the retries: %v", get)
	}
	// Same correlation data, other content: another request.
	a.handleRequest(request("c1", false, "SET", "k", "w"))
	other := awaitResponses(t, a, 1)
	if len(other) != 1 || userProp(other[0], wire.PropTimestamp) == v1 {
		t.Fatalf("another request with the same correlation data: %v", other)
	}
}

// A read sent again by its client is carried out again; redelivered by
// the broker, it is not answered twice.
func TestReadArrivingAgain(t *testing.T) {
	a := newUnconnected(t)
	a.handleRequest(request("g", false, "GET", "k"))
	a.handleRequest(request("g", true, "GET", "k"))
	if got := awaitResponses(t, a, 1); len(got) != 1 {
		t.Fatalf("%d responses", len(got))
	}
	time.Sleep(50 * time.Millisecond)
	if got := drain(t, a); len(got) != 0 {
		t.Fatalf("the redelivery was answered: %v", got)
	}
	a.handleRequest(request("g", false, "GET", "k"))
	if got := awaitResponses(t, a, 1); len(got) != 1 || string(got[0].Payload) != "$-1\r\n" {
		t.Fatalf("the client's retry: %v", got)
	}
}

func userProp(p *packets.Publish, key string) string {
	for _, u := range p.Properties.User {
		if u.Key == key {
			return u.Value
		}
	}
	return ""
}
