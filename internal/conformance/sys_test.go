package conformance

import (
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// [MQTT-3.3.4-1] "The receiver of a PUBLISH Packet MUST respond with the
// packet as determined by the QoS in the PUBLISH Packet", also when it
// refuses the message: a publish on a topic under $SYS, which the server
// keeps from clients (4.7.2, "The Server SHOULD prevent Clients from
// using such Topic Names to exchange messages with other Clients"), gets
// PUBACK 0x90 (Topic Name invalid) at QoS 1 and reaches no subscriber,
// not even one to $SYS/#.
func TestMQTT_3_3_4_1_PublishUnderSysIsAnswered(t *testing.T) {
	addr := start(t, server.Config{})
	s, _ := connectOK(t, addr, "s", true, packets.Properties{})
	s.subscribe(1, 0, sub("$SYS/#", 1))
	c, _ := connectOK(t, addr, "c", true, packets.Properties{})
	if ack := c.publish(msg("$SYS/broker/uptime", 1, "forged")); ack.ReasonCode != packets.ErrTopicNameInvalid.Code {
		t.Fatalf("PUBACK %#x, want 0x90", ack.ReasonCode)
	}
	c.publish(msg("$SYS/broker/uptime", 0, "forged"))
	c.ping()
	s.nothing()
}
