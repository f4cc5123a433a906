package conformance

import (
	"bytes"
	"testing"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// retained publishes a retained message on topic and waits for its
// PUBACK.
func retained(t *testing.T, addr, topic, payload string) {
	t.Helper()
	p, _ := connectOK(t, addr, "retainer", true, packets.Properties{})
	m := msg(topic, 1, payload)
	m.FixedHeader.Retain = true
	p.publish(m)
	p.bye()
}

// [MQTT-3.3.1-9] "If Retain Handling is set to 0 the Server MUST send the
// retained messages matching the Topic Filter of the subscription to the
// Client"; [MQTT-3.3.1-10] "If Retain Handling is set to 1 then if the
// subscription did not already exist, the Server MUST send all retained
// message matching the Topic Filter of the subscription to the Client,
// and if the subscription did exist the Server MUST NOT send the retained
// messages"; [MQTT-3.3.1-11] "If Retain Handling is set to 2, the Server
// MUST NOT send the retained messages".
func TestMQTT_3_3_1_9_RetainHandling(t *testing.T) {
	addr := start(t, server.Config{})
	retained(t, addr, "rh/x", "kept")
	c, _ := connectOK(t, addr, "rh", true, packets.Properties{})

	s := sub("rh/#", 1)
	c.subscribe(1, 0, s)
	if got := c.recvType(packets.Publish); string(got.Payload) != "kept" || !got.FixedHeader.Retain {
		t.Fatalf("handling 0: %q retain %v", got.Payload, got.FixedHeader.Retain)
	} else {
		c.ack(got)
	}
	c.subscribe(2, 0, s) // 0 again: sent again
	c.ack(c.recvType(packets.Publish))

	s.RetainHandling = 1
	c.subscribe(3, 0, s) // exists: not sent
	c.nothing()
	c.subscribe(4, 0, sub("rh/+", 1)) // handling 0 on a new filter, then
	c.ack(c.recvType(packets.Publish))
	s = sub("rh/x", 1)
	s.RetainHandling = 1
	c.subscribe(5, 0, s) // new: sent
	c.ack(c.recvType(packets.Publish))

	s = sub("rh/x/#", 1)
	s.RetainHandling = 2
	c.subscribe(6, 0, s)
	c.nothing()
}

// [MQTT-3.3.1-12] "If the value of Retain As Published subscription
// option is set to 0, the Server MUST set the RETAIN flag to 0 when
// forwarding an Application Message regardless of how the RETAIN flag was
// set in the received PUBLISH packet"; [MQTT-3.3.1-13] "If the value of
// Retain As Published subscription option is set to 1, the Server MUST
// set the RETAIN flag equal to the RETAIN flag in the received PUBLISH
// packet".
func TestMQTT_3_3_1_12_RetainAsPublished(t *testing.T) {
	addr := start(t, server.Config{})
	plain, _ := connectOK(t, addr, "plain", true, packets.Properties{})
	plain.subscribe(1, 0, sub("rap/x", 0))
	asPublished, _ := connectOK(t, addr, "as-published", true, packets.Properties{})
	s := sub("rap/x", 0)
	s.RetainAsPublished = true
	asPublished.subscribe(1, 0, s)

	retained(t, addr, "rap/x", "r")
	if got := plain.recvType(packets.Publish); got.FixedHeader.Retain {
		t.Fatal("retain 1 forwarded to a subscription without Retain As Published")
	}
	if got := asPublished.recvType(packets.Publish); !got.FixedHeader.Retain {
		t.Fatal("retain 0 forwarded to a subscription with Retain As Published")
	}
}

// [MQTT-3.8.3-3] "Bit 2 of the Subscription Options represents the No
// Local option. If the value is 1, Application Messages MUST NOT be
// forwarded to a connection with a ClientID equal to the ClientID of the
// publishing connection".
func TestMQTT_3_8_3_3_NoLocal(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "nl", true, packets.Properties{})
	s := sub("nl/#", 0)
	s.NoLocal = true
	c.subscribe(1, 0, s)
	c.subscribe(2, 0, sub("local/#", 0))
	c.publish(msg("nl/x", 0, "mine"))
	c.nothing()
	c.publish(msg("local/x", 0, "mine"))
	c.recvType(packets.Publish)
}

// [MQTT-3.3.2-12] "A Server MUST accept all Topic Alias values greater
// than 0 and less than or equal to the Topic Alias Maximum value that it
// returned in the CONNACK packet": a client that set alias 1 to a topic
// may publish with the alias and an empty topic; subscribers get the
// topic. An alias above the Topic Alias Maximum (10), which the client
// must not send [MQTT-3.3.2-9], ends the connection with DISCONNECT 0x94
// (Topic Alias invalid).
func TestMQTT_3_3_2_12_TopicAliasFromTheClient(t *testing.T) {
	addr := start(t, server.Config{})
	s, _ := connectOK(t, addr, "s", true, packets.Properties{})
	s.subscribe(1, 0, sub("alias/#", 0))
	c, ack := connectOK(t, addr, "c", true, packets.Properties{})
	if ack.Properties.TopicAliasMaximum != 10 {
		t.Fatalf("CONNACK Topic Alias Maximum %d, want 10", ack.Properties.TopicAliasMaximum)
	}
	m := msg("alias/long/topic", 0, "1")
	m.Properties.TopicAlias, m.Properties.TopicAliasFlag = 1, true
	c.publish(m)
	m.TopicName, m.Payload = "", []byte("2")
	c.publish(m)
	for _, want := range []string{"1", "2"} {
		if got := s.recvType(packets.Publish); got.TopicName != "alias/long/topic" || string(got.Payload) != want {
			t.Fatalf("got %q %q, want alias/long/topic %q", got.TopicName, got.Payload, want)
		}
	}
	m.Properties.TopicAlias = 11
	m.TopicName = "alias/x"
	c.send(m)
	c.disconnected(packets.ErrTopicAliasInvalid.Code)
}

// [MQTT-3.3.2-11] the server's aliases to a client that announced a Topic
// Alias Maximum: "A Server MUST NOT send a PUBLISH packet with a Topic
// Alias greater than the Topic Alias Maximum value sent by the Client in
// the CONNECT packet"; a message with an alias set before carries the
// alias and an empty topic, which the client resolves. A client that
// announced none gets no alias.
func TestMQTT_3_3_2_11_TopicAliasToTheClient(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "aliased", true, packets.Properties{TopicAliasMaximum: 1})
	c.subscribe(1, 0, sub("to/#", 0))
	n, _ := connectOK(t, addr, "plain", true, packets.Properties{})
	n.subscribe(1, 0, sub("to/#", 0))
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	for _, topic := range []string{"to/a", "to/a", "to/b"} {
		p.publish(msg(topic, 0, topic))
	}
	aliases := map[uint16]string{}
	for i := 0; i < 3; i++ {
		got := c.recvType(packets.Publish)
		if got.Properties.TopicAlias > 1 {
			t.Fatalf("alias %d above the client's maximum 1", got.Properties.TopicAlias)
		}
		topic := got.TopicName
		if got.Properties.TopicAlias > 0 {
			if topic == "" {
				topic = aliases[got.Properties.TopicAlias]
			} else {
				aliases[got.Properties.TopicAlias] = topic
			}
		}
		if topic != string(got.Payload) {
			t.Fatalf("message %q resolved to topic %q", got.Payload, topic)
		}
		if got := n.recvType(packets.Publish); got.Properties.TopicAlias != 0 || got.TopicName == "" {
			t.Fatalf("alias %d to a client without a Topic Alias Maximum", got.Properties.TopicAlias)
		}
	}
}

// [MQTT-3.3.2-15] "The Server MUST send the Response Topic unaltered to
// all subscribers receiving the Application Message"; [MQTT-3.3.2-16]
// "The Server MUST send the Correlation Data unaltered"; [MQTT-3.3.2-17]
// "The Server MUST send all User Properties unaltered"; [MQTT-3.3.2-18]
// "The Server MUST maintain the order of User Properties";
// [MQTT-3.3.2-20] Content Type unaltered;
// [MQTT-3.3.2-4] "A Server MUST send the Payload Format Indicator
// unaltered".
func TestMQTT_3_3_2_15_RequestResponseProperties(t *testing.T) {
	addr := start(t, server.Config{})
	s, _ := connectOK(t, addr, "responder", true, packets.Properties{})
	s.subscribe(1, 0, sub("rr/request", 1))
	c, _ := connectOK(t, addr, "requester", true, packets.Properties{})
	m := msg("rr/request", 1, "q")
	m.Properties = packets.Properties{
		ResponseTopic:     "rr/response/requester",
		CorrelationData:   []byte{0, 1, 2, 0xff},
		ContentType:       "text/plain",
		PayloadFormat:     1,
		PayloadFormatFlag: true,
		User:              []packets.UserProperty{{Key: "b", Val: "2"}, {Key: "a", Val: "1"}, {Key: "b", Val: "3"}},
	}
	c.publish(m)
	got := s.recvType(packets.Publish)
	p := got.Properties
	if p.ResponseTopic != m.Properties.ResponseTopic || !bytes.Equal(p.CorrelationData, m.Properties.CorrelationData) ||
		p.ContentType != "text/plain" || !p.PayloadFormatFlag || p.PayloadFormat != 1 {
		t.Fatalf("properties %+v", p)
	}
	if len(p.User) != 3 || p.User[0] != m.Properties.User[0] || p.User[1] != m.Properties.User[1] || p.User[2] != m.Properties.User[2] {
		t.Fatalf("user properties %v, want %v in order", p.User, m.Properties.User)
	}
}

// [MQTT-3.3.1-1] "The DUP flag MUST be set to 1 by the Client or Server
// when it attempts to re-deliver a PUBLISH packet": a message queued for
// a session while it had no connection is delivered for the first time
// on reconnect, with DUP 0; one sent and not acknowledged is redelivered
// with DUP 1 [MQTT-4.4.0-1].
func TestMQTT_3_3_1_1_QueuedMessageIsAFirstDelivery(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "dup", true, session())
	c.subscribe(1, 0, sub("dup/#", 1))
	c.bye()
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	p.publish(msg("dup/x", 1, "queued"))

	c, _ = connectOK(t, addr, "dup", false, session())
	first := c.recvType(packets.Publish)
	if first.FixedHeader.Dup {
		t.Fatal("DUP 1 on the first delivery of a queued message")
	}
	_ = c.conn.Close() // not acknowledged

	c, _ = connectOK(t, addr, "dup", false, session())
	again := c.recvType(packets.Publish)
	if !again.FixedHeader.Dup || string(again.Payload) != "queued" {
		t.Fatalf("redelivery %q DUP %v, want DUP 1", again.Payload, again.FixedHeader.Dup)
	}
	c.ack(again)
}

// [MQTT-3.3.2-5] "If the Message Expiry Interval has passed and the
// Server has not managed to start onward delivery to a matching
// subscriber, then it MUST delete the copy of the message for that
// subscriber"; [MQTT-3.3.2-6] "The PUBLISH packet sent to a Client by the
// Server MUST contain a Message Expiry Interval set to the received value
// minus the time that the message has been waiting in the Server". A
// message with an expiry of 1 s queued for an offline session is not
// delivered after 1.2 s; one with 3 s, delivered after about 1.2 s,
// carries 1 (the time left, 1.8 s, in whole seconds, rounded down).
func TestMQTT_3_3_2_5_MessageExpiry(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "exp", true, session())
	c.subscribe(1, 0, sub("exp/#", 1))
	c.bye()
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	short := msg("exp/short", 1, "short")
	short.Properties.MessageExpiryInterval = 1
	p.publish(short)
	long := msg("exp/long", 1, "long")
	long.Properties.MessageExpiryInterval = 3
	p.publish(long)
	time.Sleep(1200 * time.Millisecond) // the time the messages wait in the queue: past the short one's expiry

	c, _ = connectOK(t, addr, "exp", false, session())
	got := c.recvType(packets.Publish)
	if got.TopicName != "exp/long" {
		t.Fatalf("delivered %q after its expiry", got.TopicName)
	}
	if got.Properties.MessageExpiryInterval != 1 {
		t.Fatalf("Message Expiry Interval %d, want 1 (of 3, after 1.2 s)", got.Properties.MessageExpiryInterval)
	}
	c.ack(got)
	c.nothing()
}

// [MQTT-3.4.2-1] "The Client or Server sending the PUBACK packet MUST use
// one of the PUBACK Reason Codes": a publish the server refuses (under the
// state store's reserved prefix) is answered PUBACK 0x87 (Not authorized)
// and not delivered.
func TestMQTT_3_4_2_1_PubackReasonCodeOnRefusal(t *testing.T) {
	addr := start(t, server.Config{})
	s, _ := connectOK(t, addr, "s", true, packets.Properties{})
	s.subscribe(1, 0, sub("clients/#", 0))
	c, _ := connectOK(t, addr, "forger", true, packets.Properties{})
	ack := c.publish(msg("clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/00/command/notify/00", 1, "forged"))
	if ack.ReasonCode != packets.ErrNotAuthorized.Code {
		t.Fatalf("PUBACK %#x, want 0x87", ack.ReasonCode)
	}
	s.nothing()
}

// [MQTT-3.3.4-9] "The Server MUST NOT send more than Receive Maximum QoS 1
// and QoS 2 PUBLISH packets for which it has not received PUBACK, PUBCOMP,
// or PUBREC with a Reason Code of 128 or greater from the Client"
// (4.9 Flow Control).
func TestMQTT_3_3_4_9_ClientReceiveMaximum(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "slow", true, packets.Properties{ReceiveMaximum: 2})
	c.subscribe(1, 0, sub("flow/#", 1))
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	for i := 0; i < 5; i++ {
		p.publish(msg("flow/x", 1, string(rune('a'+i))))
	}
	var got []packets.Packet
	got = append(got, c.recvType(packets.Publish), c.recvType(packets.Publish))
	c.nothing() // two unacknowledged: no third
	for len(got) < 5 {
		c.ack(got[len(got)-2])
		got = append(got, c.recvType(packets.Publish))
	}
	for i, pk := range got {
		if string(pk.Payload) != string(rune('a'+i)) {
			t.Fatalf("message %d is %q", i, pk.Payload)
		}
	}
}
