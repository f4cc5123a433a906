package conformance

import (
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// A PUBLISH property that may be there once, there twice, is a Protocol
// Error: 3.3.2.3.4 "It is a Protocol Error to include the Topic Alias
// value more than once", 3.3.2.3.5 "... the Response Topic more than
// once", 3.3.2.3.6 "... Correlation Data more than once", 3.3.2.3.9 "...
// the Content Type more than once". The Payload Format Indicator and the
// Message Expiry Interval have the same rule where they are properties of
// a Will (3.1.3.2.3, 3.1.3.2.4), and a second value of either leaves the
// message with two meanings, so a PUBLISH with one twice is refused the
// same way. [MQTT-4.13.1-1] "When a Server detects a Malformed Packet or
// Protocol Error, and a Reason Code is given in the specification, it
// MUST close the Network Connection": DISCONNECT 0x82, and the message
// reaches nobody.
func TestMQTT_4_13_1_1_DuplicatePublishProperties(t *testing.T) {
	addr := start(t, server.Config{})
	s, _ := connectOK(t, addr, "s", true, packets.Properties{})
	s.subscribe(1, 0, sub("dup/#", 0))
	for _, tc := range []struct {
		name  string
		props [][]byte
	}{
		{"payload format indicator", [][]byte{prop(propPayloadFormat, 1), prop(propPayloadFormat, 0)}},
		{"message expiry interval", [][]byte{prop(propMessageExpiry, u32(60)...), prop(propMessageExpiry, u32(1)...)}},
		{"topic alias", [][]byte{prop(propTopicAlias, u16(1)...), prop(propTopicAlias, u16(2)...)}},
		{"response topic", [][]byte{prop(propResponseTopic, str([]byte("r/1"))...), prop(propResponseTopic, str([]byte("r/2"))...)}},
		{"correlation data", [][]byte{prop(propCorrelationData, str([]byte("a"))...), prop(propCorrelationData, str([]byte("b"))...)}},
		{"content type", [][]byte{prop(propContentType, str([]byte("text/plain"))...), prop(propContentType, str([]byte("x"))...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := connectOK(t, addr, "c", true, packets.Properties{})
			c.write(rawPublish("dup/x", tc.name, tc.props...))
			c.disconnected(packets.ErrProtocolViolation.Code)
			s.nothing()
		})
	}
	// Once each, the same properties are served.
	c, _ := connectOK(t, addr, "c", true, packets.Properties{})
	c.write(rawPublish("dup/x", "once", prop(propPayloadFormat, 1), prop(propMessageExpiry, u32(60)...),
		prop(propResponseTopic, str([]byte("r/1"))...), prop(propCorrelationData, str([]byte("a"))...),
		prop(propContentType, str([]byte("text/plain"))...)))
	if ack := c.recvType(packets.Puback); ack.ReasonCode != 0 {
		t.Fatalf("PUBACK %#x", ack.ReasonCode)
	}
	if got := s.recvType(packets.Publish); string(got.Payload) != "once" {
		t.Fatalf("got %q", got.Payload)
	}
}

// CONNECT properties that are a Protocol Error (3.1.2.11): 3.1.2.11.2 "It
// is a Protocol Error to include the Session Expiry Interval more than
// once"; 3.1.2.11.3 "It is a Protocol Error to include the Receive
// Maximum value more than once or for it to have the value 0"; 3.1.2.11.4
// "It is a Protocol Error to include the Maximum Packet Size more than
// once, or for the value to be set to zero"; 3.1.2.11.5 "It is a Protocol
// Error to include the Topic Alias Maximum value more than once".
// [MQTT-3.1.4-1] "The Server MUST validate that the CONNECT packet
// matches the format described in section 3.1 and close the Network
// Connection if it does not match", with CONNACK 0x82 before it (4.13),
// and nothing of the client is kept.
func TestMQTT_3_1_4_1_ConnectPropertiesThatAreAProtocolError(t *testing.T) {
	addr := start(t, server.Config{})
	for _, tc := range []struct {
		name  string
		props [][]byte
	}{
		{"receive maximum 0", [][]byte{prop(propReceiveMaximum, u16(0)...)}},
		{"maximum packet size 0", [][]byte{prop(propMaximumPacketSize, u32(0)...)}},
		{"session expiry interval twice", [][]byte{prop(propSessionExpiry, u32(0)...), prop(propSessionExpiry, u32(3600)...)}},
		{"receive maximum twice", [][]byte{prop(propReceiveMaximum, u16(10)...), prop(propReceiveMaximum, u16(20)...)}},
		{"maximum packet size twice", [][]byte{prop(propMaximumPacketSize, u32(1000)...), prop(propMaximumPacketSize, u32(2000)...)}},
		{"topic alias maximum twice", [][]byte{prop(propTopicAliasMaximum, u16(1)...), prop(propTopicAliasMaximum, u16(2)...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			c.write(rawConnect(5, "bad", nil, tc.props...))
			ack := c.recvType(packets.Connack)
			if ack.ReasonCode != packets.ErrProtocolViolation.Code {
				t.Fatalf("CONNACK %#x (%s), want 0x82", ack.ReasonCode, ack.Properties.ReasonString)
			}
			c.closed()
		})
	}
	// The same properties once, with values allowed, are served.
	c := dial(t, addr)
	c.write(rawConnect(5, "good", nil, prop(propReceiveMaximum, u16(10)...), prop(propMaximumPacketSize, u32(1000)...),
		prop(propSessionExpiry, u32(0)...), prop(propTopicAliasMaximum, u16(1)...)))
	if ack := c.recvType(packets.Connack); ack.ReasonCode != 0 {
		t.Fatalf("CONNACK %#x", ack.ReasonCode)
	}
}
