package conformance

import (
	"testing"
	"time"

	"github.com/dssio/dss/internal/broker"
	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// [MQTT-3.9.3-1] "The order of Reason Codes in the SUBACK packet MUST
// match the order of Topic Filters in the SUBSCRIBE packet", and the
// reason codes of subscriptions the server does not serve: with wildcard
// subscriptions off, a filter with + or # gets 0xA2 (Wildcard
// Subscriptions not supported) and Wildcard Subscription Available 0 is
// announced; the other filters of the same SUBSCRIBE are served.
func TestMQTT_3_9_3_1_WildcardSubscriptionsNotSupported(t *testing.T) {
	addr := start(t, server.Config{Capabilities: capabilities(func(c *broker.Capabilities) { c.WildcardSubscriptions = false })})
	c, ack := connectOK(t, addr, "w", true, packets.Properties{})
	if !ack.Properties.WildcardSubAvailableFlag || ack.Properties.WildcardSubAvailable != 0 {
		t.Fatal("CONNACK does not announce Wildcard Subscription Available 0")
	}
	codes := c.subscribe(1, 0, sub("a/+", 1), sub("a/b", 1), sub("#", 0))
	want := []byte{packets.ErrWildcardSubscriptionsNotSupported.Code, 1, packets.ErrWildcardSubscriptionsNotSupported.Code}
	if string(codes) != string(want) {
		t.Fatalf("SUBACK %x, want %x", codes, want)
	}
}

// With shared subscriptions off, $share/... gets SUBACK 0x9E (Shared
// Subscriptions not supported), announced as Shared Subscription
// Available 0.
func TestMQTT_3_9_3_1_SharedSubscriptionsNotSupported(t *testing.T) {
	addr := start(t, server.Config{Capabilities: capabilities(func(c *broker.Capabilities) { c.SharedSubscriptions = false })})
	c, ack := connectOK(t, addr, "s", true, packets.Properties{})
	if !ack.Properties.SharedSubAvailableFlag || ack.Properties.SharedSubAvailable != 0 {
		t.Fatal("CONNACK does not announce Shared Subscription Available 0")
	}
	if codes := c.subscribe(1, 0, sub("$share/g/a/b", 1)); codes[0] != packets.ErrSharedSubscriptionsNotSupported.Code {
		t.Fatalf("SUBACK %#x, want 0x9E", codes[0])
	}
}

// Shared subscriptions (4.8.2): each message on the filter goes to one
// member of the group, and a member gets no retained messages when it
// subscribes. [MQTT-4.8.2-1] "A Shared Subscription's Topic Filter MUST
// start with $share/ and MUST contain a ShareName that is at least one
// character long": $share//x is refused (0x8F, Topic Filter invalid).
func TestMQTT_4_8_2_1_SharedSubscriptions(t *testing.T) {
	addr := start(t, server.Config{})
	retained(t, addr, "sh/x", "old")
	a, _ := connectOK(t, addr, "a", true, packets.Properties{})
	b, _ := connectOK(t, addr, "b", true, packets.Properties{})
	for _, c := range []*raw{a, b} {
		if codes := c.subscribe(1, 0, sub("$share/g/sh/#", 0)); codes[0] != 0 {
			t.Fatalf("SUBACK %#x", codes[0])
		}
		c.nothing() // no retained message
	}
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	const n = 20
	for i := 0; i < n; i++ {
		p.publish(msg("sh/x", 0, "m"))
	}
	got := 0
	deadline := time.Now().Add(wait)
	for got < n && time.Now().Before(deadline) {
		for _, c := range []*raw{a, b} {
			if _, err := c.next(10 * time.Millisecond); err == nil {
				got++
			} else if err != errNoPacket {
				t.Fatal(err)
			}
		}
	}
	if got != n {
		t.Fatalf("%d deliveries of %d messages to a group of two", got, n)
	}
	a.nothing() // and no message twice
	b.nothing()
	if codes := a.subscribe(2, 0, sub("$share//x", 0)); codes[0] != packets.ErrTopicFilterInvalid.Code {
		t.Fatalf("SUBACK %#x for $share//x, want 0x8F", codes[0])
	}
}

// [MQTT-3.8.3-4] "It is a Protocol Error to set the No Local bit to 1 on
// a Shared Subscription": the connection ends with DISCONNECT 0x82.
func TestMQTT_3_8_3_4_NoLocalOnASharedSubscription(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "nl", true, packets.Properties{})
	s := sub("$share/g/x", 0)
	s.NoLocal = true
	c.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, PacketID: 1, Filters: packets.Subscriptions{s}})
	c.disconnected(packets.ErrProtocolViolation.Code)
}

// [MQTT-3.8.4-3] "If a Server receives a SUBSCRIBE packet containing a
// Topic Filter that is identical to a Non-shared Subscription's Topic
// Filter for the current Session then it MUST replace that existing
// Subscription with a new Subscription": subscribing again with QoS 0
// replaces QoS 1, and messages come at most once.
func TestMQTT_3_8_4_3_SubscribeAgainReplaces(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "again", true, packets.Properties{})
	c.subscribe(1, 0, sub("re/x", 1))
	c.subscribe(2, 0, sub("re/x", 0))
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	p.publish(msg("re/x", 1, "once"))
	if got := c.recvType(packets.Publish); got.FixedHeader.Qos != 0 {
		t.Fatalf("QoS %d, want 0 of the replacing subscription", got.FixedHeader.Qos)
	}
	c.nothing()
}

// [MQTT-3.3.4-3] "If the Client specified a Subscription Identifier for
// any of the overlapping subscriptions the Server MUST send those
// Subscription Identifiers in the message which is published as the
// result of the subscriptions"; [MQTT-3.3.4-2] the server "MUST deliver
// the message to the Client respecting the maximum QoS of all the
// matching subscriptions" when it sends one message for overlapping ones.
func TestMQTT_3_3_4_3_SubscriptionIdentifiers(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "ids", true, packets.Properties{})
	c.subscribe(1, 5, sub("ids/#", 0))
	c.subscribe(2, 9, sub("ids/x", 1))
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	p.publish(msg("ids/x", 1, "both"))
	got := c.recvType(packets.Publish)
	ids := got.Properties.SubscriptionIdentifier
	if len(ids) != 2 || ids[0]+ids[1] != 14 {
		t.Fatalf("subscription identifiers %v, want 5 and 9", ids)
	}
	if got.FixedHeader.Qos != 1 {
		t.Fatalf("QoS %d, want 1 (the highest of the matching subscriptions)", got.FixedHeader.Qos)
	}
	c.ack(got)
	c.nothing()
}

// [MQTT-3.11.3-1] "The Server sending an UNSUBACK packet MUST use one of
// the UNSUBSCRIBE Reason Code values for each Topic Filter received":
// 0x00 for a subscription that existed, 0x11 (No subscription existed)
// otherwise.
func TestMQTT_3_11_3_1_UnsubackReasonCodes(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "u", true, packets.Properties{})
	c.subscribe(1, 0, sub("u/x", 0))
	c.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe, Qos: 1}, PacketID: 2,
		Filters: packets.Subscriptions{{Filter: "u/x"}, {Filter: "u/never"}}})
	ack := c.recvType(packets.Unsuback)
	if ack.PacketID != 2 || string(ack.ReasonCodes) != string([]byte{0, packets.CodeNoSubscriptionExisted.Code}) {
		t.Fatalf("UNSUBACK id %d codes %x", ack.PacketID, ack.ReasonCodes)
	}
}
