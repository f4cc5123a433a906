package conformance

import (
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// [MQTT-3.1.3-12] "If the User Name Flag is set to 1, the User Name is the
// next field in the Payload. The User Name MUST be a UTF-8 Encoded
// String", and [MQTT-1.5.4-1] "The character data in a UTF-8 Encoded
// String MUST be well-formed UTF-8 ... In particular, the character data
// MUST NOT include encodings of code points between U+D800 and U+DFFF"
// ("If the Client or Server receives an MQTT Control Packet containing
// ill-formed UTF-8 it is a Malformed Packet"): CONNACK 0x81 (Malformed
// Packet), not 0x86 (Bad User Name or Password), then the end of the
// connection; and [MQTT-1.5.4-2] "A UTF-8 Encoded String MUST NOT include
// an encoding of the null character U+0000".
func TestMQTT_3_1_3_12_UserNameNotUTF8(t *testing.T) {
	addr := start(t, server.Config{})
	for _, user := range [][]byte{{0xff, 0xfe}, {'a', 0xc3}, {0xed, 0xa0, 0x80}, {'a', 0x00}} {
		c := dial(t, addr)
		c.write(rawConnect(5, "u", user))
		ack := c.recvType(packets.Connack)
		if ack.ReasonCode != packets.ErrMalformedPacket.Code {
			t.Fatalf("user name %x: CONNACK %#x (%s), want 0x81", user, ack.ReasonCode, ack.Properties.ReasonString)
		}
		c.closed()
	}
}
