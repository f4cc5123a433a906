package conformance

import (
	"github.com/dssio/dss/internal/broker"
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// aliased is m with Topic Alias alias.
func aliased(m packets.Packet, alias uint16) packets.Packet {
	m.Properties.TopicAlias, m.Properties.TopicAliasFlag = alias, true
	return m
}

// [MQTT-3.3.2-7] "A receiver MUST NOT carry forward any Topic Alias
// mappings from one Network Connection to another" ("Topic Alias mappings
// exist only within a Network Connection and last only for the lifetime
// of that Network Connection"), and 3.3.4: "If the receiver does not
// already have a mapping for this Topic Alias ... If the packet has a zero
// length Topic Name field it is a Protocol Error and the receiver uses
// DISCONNECT with Reason Code of 0x82 (Protocol Error)". An alias set on
// the session's first connection is unknown on its second: a publish
// through it ends the connection and reaches nobody; so does one through
// an alias never set at all.
func TestMQTT_3_3_2_7_TopicAliasesLastOneConnection(t *testing.T) {
	addr := start(t, server.Config{})
	s, _ := connectOK(t, addr, "s", true, packets.Properties{})
	s.subscribe(1, 0, sub("alias/#", 1))

	c, _ := connectOK(t, addr, "c", true, session())
	if ack := c.publish(aliased(msg("alias/first", 1, "set"), 1)); ack.ReasonCode != 0 {
		t.Fatalf("PUBACK %#x", ack.ReasonCode)
	}
	s.ack(s.recvType(packets.Publish))
	c.bye()

	c, ack := connectOK(t, addr, "c", false, session())
	if !ack.SessionPresent {
		t.Fatal("the session did not outlive its connection")
	}
	c.send(aliased(msg("", 1, "carried forward?"), 1))
	c.disconnected(packets.ErrProtocolViolation.Code)
	s.nothing()

	n, _ := connectOK(t, addr, "n", true, packets.Properties{})
	n.send(aliased(msg("", 1, "never set"), 2))
	n.disconnected(packets.ErrProtocolViolation.Code)
	s.nothing()
}

// [MQTT-3.3.2-8] "A sender MUST NOT send a PUBLISH packet containing a
// Topic Alias which has the value 0", and 3.3.4: "A Topic Alias value of
// 0 or greater than the Maximum Topic Alias is a Protocol Error, the
// receiver uses DISCONNECT with Reason Code of 0x94 (Topic Alias
// invalid)". The encoder leaves an alias of 0 out, so the packet is
// written by hand.
func TestMQTT_3_3_2_8_TopicAliasZero(t *testing.T) {
	addr := start(t, server.Config{})
	s, _ := connectOK(t, addr, "s", true, packets.Properties{})
	s.subscribe(1, 0, sub("alias/#", 0))
	c, _ := connectOK(t, addr, "c", true, packets.Properties{})
	c.write(rawPublish("alias/zero", "0", prop(propTopicAlias, u16(0)...)))
	c.disconnected(packets.ErrTopicAliasInvalid.Code)
	s.nothing()
}

// [MQTT-3.2.2-18] "If Topic Alias Maximum is absent or 0, the Client MUST
// NOT send any Topic Aliases on to the Server": with
// --topic-alias-maximum 0 the CONNACK announces none and any alias is
// above the maximum, DISCONNECT 0x94 (3.3.4).
func TestMQTT_3_2_2_18_NoTopicAliases(t *testing.T) {
	addr := start(t, server.Config{Capabilities: capabilities(func(c *broker.Capabilities) { c.TopicAliasMaximum = 0 })})
	c, ack := connectOK(t, addr, "c", true, packets.Properties{})
	if ack.Properties.TopicAliasMaximum != 0 {
		t.Fatalf("CONNACK Topic Alias Maximum %d, want none", ack.Properties.TopicAliasMaximum)
	}
	c.send(aliased(msg("alias/x", 1, "x"), 1))
	c.disconnected(packets.ErrTopicAliasInvalid.Code)
}

// [MQTT-3.1.2-27] "If Topic Alias Maximum is absent or zero, the Server
// MUST NOT send any Topic Aliases to the Client", and the aliases the
// server sends last one connection too [MQTT-3.3.2-7]: a client that
// comes back gets the topic name again before any alias stands for it.
func TestMQTT_3_3_2_7_ServerAliasesLastOneConnection(t *testing.T) {
	addr := start(t, server.Config{})
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	for round := 0; round < 2; round++ {
		c, _ := connectOK(t, addr, "c", round == 0, packets.Properties{TopicAliasMaximum: 5, SessionExpiryInterval: 3600, SessionExpiryIntervalFlag: true})
		if round == 0 {
			c.subscribe(1, 0, sub("back/#", 0))
		}
		p.publish(msg("back/t", 0, "one"))
		p.publish(msg("back/t", 0, "two"))
		first, second := c.recvType(packets.Publish), c.recvType(packets.Publish)
		if first.TopicName != "back/t" {
			t.Fatalf("connection %d: the first message has topic %q (alias %d): an alias of the connection before", round+1, first.TopicName, first.Properties.TopicAlias)
		}
		if second.TopicName != "" && second.TopicName != "back/t" || second.TopicName == "" && second.Properties.TopicAlias != first.Properties.TopicAlias {
			t.Fatalf("connection %d: second message topic %q alias %d, first alias %d", round+1, second.TopicName, second.Properties.TopicAlias, first.Properties.TopicAlias)
		}
		c.bye()
	}
}
