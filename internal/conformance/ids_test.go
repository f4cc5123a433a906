package conformance

import (
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// [MQTT-2.2.1-3] "Each time a Client sends a new SUBSCRIBE, UNSUBSCRIBE,
// or PUBLISH (where QoS > 0) MQTT Control Packet it MUST assign it a non
// zero Packet Identifier that is currently unused"; [MQTT-2.2.1-4] the
// server likewise for its PUBLISH: the two are independent. A persistent
// session holds a message the server sent with packet id 1 and that was
// not acknowledged; the client reconnects and resubscribes with its own
// packet id 1: the SUBSCRIBE is served (it was refused with 0x91, which
// mosquitto_sub -c gave up on), and the message is still redelivered and
// acknowledged.
func TestMQTT_2_2_1_3_SubscribeWithTheIDOfAQueuedMessage(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "resub", true, session())
	c.subscribe(1, 0, sub("ids/#", 1))
	c.bye()
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	p.publish(msg("ids/x", 1, "queued"))

	c, _ = connectOK(t, addr, "resub", false, session())
	queued := c.recvType(packets.Publish)
	if queued.PacketID != 1 {
		t.Skipf("the queued message has packet id %d; the test needs 1", queued.PacketID)
	}
	if codes := c.subscribe(1, 0, sub("ids/#", 1)); codes[0] != 1 {
		t.Fatalf("SUBACK %#x for a packet id the server uses outbound, want granted QoS 1", codes[0])
	}
	c.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe, Qos: 1}, PacketID: 1,
		Filters: packets.Subscriptions{{Filter: "ids/none"}}})
	if ack := c.recvType(packets.Unsuback); ack.ReasonCodes[0] == packets.ErrPacketIdentifierInUse.Code {
		t.Fatal("UNSUBACK 0x91 for a packet id the server uses outbound")
	}
	c.ack(queued)
	c.nothing()
}

// [MQTT-2.2.1-3] and [MQTT-2.2.1-4] on the state store's path: the client
// publishes requests with the packet id of a response the server sent
// and the client has not acknowledged yet. Each request is answered, the
// unacknowledged response stays in flight (it is resent on reconnect, as
// [MQTT-4.4.0-1] requires) and its late PUBACK is taken.
func TestMQTT_2_2_1_3_RequestWithTheIDOfAnUnacknowledgedResponse(t *testing.T) {
	addr := start(t, server.Config{})
	const responses = "clients/ids/services/statestore/_any_/command/invoke/response"
	c, _ := connectOK(t, addr, "req", true, session())
	c.subscribe(1, 0, sub(responses, 1))
	request := func(pid uint16, corr string, args ...string) {
		c.send(packets.Packet{
			FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1},
			PacketID:    pid,
			TopicName:   wire.RequestTopic,
			Payload:     dsstest.Cmd(args...),
			Properties: packets.Properties{ResponseTopic: responses, CorrelationData: []byte(corr),
				User: []packets.UserProperty{{Key: wire.PropTimestamp, Val: dsstest.Now()}}},
		})
	}
	// Both the PUBACK of the request and its response come; the order
	// of the two is the server's.
	answer := func() packets.Packet {
		var resp packets.Packet
		for i := 0; i < 2; i++ {
			pk := c.recv()
			if pk.FixedHeader.Type == packets.Publish {
				resp = pk
			} else if pk.FixedHeader.Type != packets.Puback || pk.ReasonCode != 0 {
				t.Fatalf("packet type %d reason %#x", pk.FixedHeader.Type, pk.ReasonCode)
			}
		}
		return resp
	}
	request(7, "a", "SET", "k", "v")
	first := answer() // not acknowledged
	request(first.PacketID, "b", "GET", "k")
	second := answer()
	if string(second.Properties.CorrelationData) != "b" || string(second.Payload) != "$1\r\nv\r\n" {
		t.Fatalf("response %q to %q", second.Payload, second.Properties.CorrelationData)
	}
	c.ack(second)
	c.ping() // the PUBACK is taken before the connection ends
	_ = c.conn.Close()

	c, _ = connectOK(t, addr, "req", false, session())
	again := c.recvType(packets.Publish)
	if string(again.Properties.CorrelationData) != "a" || !again.FixedHeader.Dup {
		t.Fatalf("resent %q DUP %v, want the unacknowledged response to SET", again.Properties.CorrelationData, again.FixedHeader.Dup)
	}
	c.ack(again)
	c.nothing()
}
