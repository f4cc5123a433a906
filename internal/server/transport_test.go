package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// request builds a request publish with the given properties.
func request(qos byte, responseTopic string, corr []byte, payload []byte, user ...paho.UserProperty) *paho.Publish {
	return &paho.Publish{
		QoS:     qos,
		Topic:   wire.RequestTopic,
		Payload: payload,
		Properties: &paho.PublishProperties{
			ResponseTopic:   responseTopic,
			CorrelationData: corr,
			User:            user,
		},
	}
}

// metric reports whether s's /metrics has the line, a series and its value.
func metric(t *testing.T, s *server.Server, line string) bool {
	t.Helper()
	return strings.Contains(dsstest.Metrics(t, s.HTTPAddr()), line)
}

func TestRequestIsAcknowledgedWithSuccess(t *testing.T) {
	// Nobody subscribes to the request topic, and the request carries user
	// properties: the PUBACK must still be 0x00 (never 0x10, never 0x01).
	_, c := start(t)
	res, err := c.Publish(request(1, c.ResponseTopic, []byte("corr"), dsstest.Cmd("SET", "k", "v"), ts(dsstest.Now()), paho.UserProperty{Key: "x", Value: "y"}))
	if err != nil || res.ReasonCode != 0x00 {
		t.Fatalf("PUBACK: %+v, %v", res, err)
	}
	c.Next() // the response, which Publish did not wait for
	expect(t, "GET", c.Request(dsstest.Cmd("GET", "k")), "$1\r\nv\r\n", "any")
}

func TestRequestsThatBreakTheTransportRules(t *testing.T) {
	s := startServer(t, server.Config{HTTPListen: "127.0.0.1:0"})
	c := dsstest.Dial(t, s.Addr(), "rules")
	set := func(key string) []byte { return dsstest.Cmd("SET", key, "v") }
	now := ts(dsstest.Now())
	// refusal checks the answer a refused request gets on its Response
	// Topic: not executed, __stat 400, the reason in __stMsg and in the
	// payload, the request's Correlation Data.
	refusal := func(what, corr, reason string) {
		t.Helper()
		p := c.Next()
		stat, _ := dsstest.UserProperty(p, wire.PropStatus)
		msg, _ := dsstest.UserProperty(p, wire.PropStatusMessage)
		if p.Topic != c.ResponseTopic || stat != wire.StatusBadRequest || msg != reason || string(p.Payload) != "-ERR "+reason+"\r\n" || string(p.Properties.CorrelationData) != corr {
			t.Fatalf("%s: answer on %s: __stat %q __stMsg %q payload %q correlation %q; want 400 and %q", what, p.Topic, stat, msg, p.Payload, p.Properties.CorrelationData, reason)
		}
	}

	res, err := c.Publish(request(1, "", []byte("corr"), set("no-response-topic"), now))
	if err == nil || res == nil || res.ReasonCode != 0x83 || res.Properties == nil || res.Properties.ReasonString != "state store request without Response Topic" {
		t.Fatalf("no Response Topic: PUBACK %+v, %v; want reason 0x83 with a Reason String", res, err)
	}
	res, err = c.Publish(request(1, c.ResponseTopic, nil, set("no-correlation"), now))
	if err == nil || res == nil || res.ReasonCode != 0x83 || res.Properties == nil || res.Properties.ReasonString != "state store request without Correlation Data" {
		t.Fatalf("no Correlation Data: PUBACK %+v, %v; want reason 0x83 with a Reason String", res, err)
	}
	refusal("no Correlation Data", "", "state store request without Correlation Data")
	if _, err := c.Publish(request(0, c.ResponseTopic, []byte("corr0"), set("qos0"), now)); err != nil {
		t.Fatalf("QoS 0 publish: %v", err)
	}
	refusal("QoS 0", "corr0", "state store requests must be sent with QoS 1")
	if _, err := c.Publish(request(0, c.ResponseTopic, nil, set("qos0-no-correlation"), now)); err != nil {
		t.Fatalf("QoS 0 publish: %v", err)
	}
	refusal("QoS 0 without Correlation Data", "", "state store requests must be sent with QoS 1 and carry Correlation Data")
	res, err = c.Publish(request(2, c.ResponseTopic, []byte("corr2"), set("qos2"), now))
	if res == nil || res.ReasonCode != 0x83 {
		t.Fatalf("QoS 2: PUBREC %+v, %v; want reason 0x83", res, err)
	}
	refusal("QoS 2", "corr2", "state store requests must be sent with QoS 1")
	// None was executed, and nothing else was answered.
	c.NoMessage(200 * time.Millisecond)
	for _, k := range []string{"no-response-topic", "no-correlation", "qos0", "qos0-no-correlation", "qos2"} {
		expect(t, "GET "+k, c.Request(dsstest.Cmd("GET", k)), "$-1\r\n", "")
	}
	for reason, n := range map[string]int{"no response topic": 1, "no correlation data": 1, "qos 0": 2, "qos 2": 1} {
		if !metric(t, s, fmt.Sprintf(`dss_requests_refused_total{reason=%q} %d`, reason, n)) {
			t.Errorf("metrics do not count the refusal %q", reason)
		}
	}
}

func TestForbiddenResponseTopicDisconnects(t *testing.T) {
	for _, topic := range []string{
		wire.RequestTopic,
		wire.ReservedPrefix,
		wire.ReservedPrefix + "/636C69656E74/command/notify/41",
	} {
		t.Run(topic, func(t *testing.T) {
			s := startServer(t, server.Config{})
			bystander := dsstest.Dial(t, s.Addr(), "bystander")
			bad := dsstest.DialNoSubscribe(t, s.Addr(), "bad")
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, _ = bad.Paho.Publish(ctx, request(1, topic, []byte("c"), dsstest.Cmd("SET", "k", "v"), ts(dsstest.Now())))
			bad.AwaitDisconnect(0x83, "a forbidden response topic")
			expect(t, "not executed", bystander.Request(dsstest.Cmd("GET", "k")), "$-1\r\n", "")
			expect(t, "bystander works", bystander.Set([]string{"k", "v"}), "+OK\r\n", "any")
		})
	}
}

func TestResponsesFollowSubscriptions(t *testing.T) {
	s, _ := start(t)
	// The vendor's Go client asks for responses on a hex client id topic;
	// a wildcard subscription must receive them too.
	c := dsstest.DialNoSubscribe(t, s.Addr(), "client-id1")
	c.ResponseTopic = "clients/636C69656E742D696431/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response"
	c.Subscribe("clients/636C69656E742D696431/#")
	expect(t, "hex topic", c.Set([]string{"k", "v"}), "+OK\r\n", "any")

	// Responses go to whoever subscribed, not only to the requester.
	listener := dsstest.Dial(t, s.Addr(), "listener")
	listener.Subscribe("responses/shared")
	requester := dsstest.DialNoSubscribe(t, s.Addr(), "requester")
	if _, err := requester.Publish(request(1, "responses/shared", []byte("corr-1"), dsstest.Cmd("GET", "k"))); err != nil {
		t.Fatal(err)
	}
	p := listener.Next()
	if p.Topic != "responses/shared" || string(p.Properties.CorrelationData) != "corr-1" || string(p.Payload) != "$1\r\nv\r\n" {
		t.Fatalf("listener got %s %q %q", p.Topic, p.Properties.CorrelationData, p.Payload)
	}
	requester.NoMessage(100 * time.Millisecond)
}

// TestResponsesFollowSubscriptionChanges changes who subscribes to a
// requester's response topic between its requests: the route the broker
// keeps on the requester's connection must not outlive the change.
func TestResponsesFollowSubscriptionChanges(t *testing.T) {
	s, _ := start(t)
	requester := dsstest.Dial(t, s.Addr(), "requester")
	expect(t, "alone", requester.Set([]string{"k", "v1"}), "+OK\r\n", "any")

	// A second subscriber receives the next response too.
	listener := dsstest.Dial(t, s.Addr(), "listener")
	listener.Subscribe(requester.ResponseTopic)
	expect(t, "watched", requester.Set([]string{"k", "v2"}), "+OK\r\n", "any")
	if p := listener.Next(); p.Topic != requester.ResponseTopic || string(p.Payload) != "+OK\r\n" {
		t.Fatalf("listener got %s %q", p.Topic, p.Payload)
	}

	// Once the requester no longer subscribes, its responses go to the
	// listener alone.
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	if _, err := requester.Paho.Unsubscribe(ctx, &paho.Unsubscribe{Topics: []string{requester.ResponseTopic}}); err != nil {
		t.Fatal(err)
	}
	requester.Send(dsstest.Cmd("GET", "k"))
	if p := listener.Next(); string(p.Payload) != "$2\r\nv2\r\n" {
		t.Fatalf("listener got %q", p.Payload)
	}
	requester.NoMessage(100 * time.Millisecond)
}

func TestOrdinaryPublishSubscribe(t *testing.T) {
	s, _ := start(t)
	sub := dsstest.DialNoSubscribe(t, s.Addr(), "sub")
	sub.Subscribe("plant/+/temperature")
	pub := dsstest.DialNoSubscribe(t, s.Addr(), "pub")
	res, err := pub.Publish(&paho.Publish{QoS: 1, Topic: "plant/line1/temperature", Payload: []byte("21.5")})
	if err != nil || res.ReasonCode != 0 {
		t.Fatalf("publish: %+v %v", res, err)
	}
	if p := sub.Next(); p.Topic != "plant/line1/temperature" || string(p.Payload) != "21.5" {
		t.Fatalf("got %s %q", p.Topic, p.Payload)
	}
}

func TestNotificationTopicsAreTheServers(t *testing.T) {
	s, _ := start(t)
	watcher := dsstest.DialNoSubscribe(t, s.Addr(), "w")
	watcher.Subscribe(wire.NotifyTopicFilter("w"))
	forger := dsstest.DialNoSubscribe(t, s.Addr(), "forger")
	res, err := forger.Publish(&paho.Publish{QoS: 1, Topic: wire.NotifyTopic("w", []byte("k")), Payload: []byte("*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n")})
	if res == nil || res.ReasonCode != 0x87 {
		t.Fatalf("forged notification: %+v, %v; want 0x87", res, err)
	}
	watcher.NoMessage(100 * time.Millisecond)
}

// TestReconnectWithTheSameClientID reconnects one client id over and over:
// the end of each connection must not take the next one's subscriptions
// with it (the response would never arrive).
func TestReconnectWithTheSameClientID(t *testing.T) {
	s := startServer(t, server.Config{})
	for i := 0; i < dsstest.Rounds(300, 5000); i++ {
		c := dsstest.Dial(t, s.Addr(), "same")
		expect(t, "GET", c.Request(dsstest.Cmd("GET", "k")), "$-1\r\n", "")
		_ = c.Paho.Disconnect(&paho.Disconnect{})
	}
}
