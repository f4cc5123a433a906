package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// sessionClient connects id with a session that outlives the connection
// and Request Problem Information 0, subscribed to its response topic
// (returned) by this connection or by the session's first; its publishes go to got, unacknowledged unless ack is set.
func sessionClient(t *testing.T, addr, id string, ack bool, got chan *paho.Publish) (*paho.Client, net.Conn, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, dsstest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c := paho.NewClient(paho.ClientConfig{
		Conn: conn,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			got <- pr.Packet
			return true, nil
		}},
		EnableManualAcknowledgment: !ack,
		PacketTimeout:              dsstest.Timeout,
	})
	expiry := uint32(60)
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	ca, err := c.Connect(ctx, &paho.Connect{ClientID: id, KeepAlive: 30, Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}})
	if err != nil || ca.ReasonCode != 0 {
		t.Fatalf("connect %s: %v %+v", id, err, ca)
	}
	topic := "clients/" + id + "/response"
	if ca.SessionPresent {
		return c, conn, topic // subscribed already
	}
	if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	return c, conn, topic
}

// sessionSet sends SET key value from c, the response to topic with corr.
func sessionSet(t *testing.T, c *paho.Client, topic string, corr []byte, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	if _, err := c.Publish(ctx, &paho.Publish{
		QoS: 1, Topic: wire.RequestTopic, Payload: dsstest.Cmd("SET", key, value),
		Properties: &paho.PublishProperties{ResponseTopic: topic, CorrelationData: corr,
			User: []paho.UserProperty{{Key: wire.PropTimestamp, Value: dsstest.Now()}}},
	}); err != nil {
		t.Fatal(err)
	}
}

// next is the next publish on got.
func next(t *testing.T, got chan *paho.Publish, what string) *paho.Publish {
	t.Helper()
	select {
	case p := <-got:
		return p
	case <-time.After(dsstest.Timeout):
		t.Fatalf("no %s", what)
		return nil
	}
}

// TestUnacknowledgedResponseIsResentIntact checks that a response the
// broker keeps for a resend owns its bytes: the server recycles the state
// of a request once its response is sent, and thousands of requests in
// between must not change what is resent after a reconnect.
func TestUnacknowledgedResponseIsResentIntact(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	got := make(chan *paho.Publish, 16)
	c, conn, topic := sessionClient(t, s.Addr(), "keeper", false, got)
	corr := []byte("the first request")
	sessionSet(t, c, topic, corr, "kept", "value")
	version, _ := dsstest.UserProperty(next(t, got, "response"), wire.PropTimestamp)
	_ = conn.Close() // without acknowledging the response

	// Other requests, every kind of response, reuse what the server can.
	other := dsstest.Dial(t, s.Addr(), "other")
	for i := range 2000 {
		k := fmt.Sprintf("k%d", i%50)
		other.Set([]string{k, fmt.Sprintf("value %d", i)})
		other.Request(dsstest.Cmd("GET", k))
		other.Request(dsstest.Cmd("DEL", "absent"))
	}

	sessionClient(t, s.Addr(), "keeper", true, got)
	p := next(t, got, "resent response")
	v, _ := dsstest.UserProperty(p, wire.PropTimestamp)
	status, _ := dsstest.UserProperty(p, wire.PropStatus)
	if !bytes.Equal(p.Properties.CorrelationData, corr) || string(p.Payload) != "+OK\r\n" || v != version || status != wire.StatusOK || p.Topic != topic {
		t.Fatalf("resent response: topic %q, correlation %q, payload %q, __ts %q, __stat %q; want %q, %q, %q, %q, %q",
			p.Topic, p.Properties.CorrelationData, p.Payload, v, status, topic, corr, "+OK\r\n", version, wire.StatusOK)
	}
}

// TestResponsesKeepUserPropertiesWithoutProblemInformation: a client that
// connects with Request Problem Information 0 (paho.golang sends it
// unless told otherwise) still gets the envelope of every response, since
// MQTT 5 exempts PUBLISH from that setting [MQTT-3.1.2-29].
func TestResponsesKeepUserPropertiesWithoutProblemInformation(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	got := make(chan *paho.Publish, 1)
	c, _, topic := sessionClient(t, s.Addr(), "no-problem-info", true, got)
	sessionSet(t, c, topic, []byte("c"), "k", "v")
	p := next(t, got, "response")
	expect(t, "SET", p, "+OK\r\n", "any")
	if status, _ := dsstest.UserProperty(p, wire.PropStatus); status != wire.StatusOK {
		t.Fatalf("__stat %q, want %q", status, wire.StatusOK)
	}
}
