package conformance

import (
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// [MQTT-4.12.0-7] "If the Client does not include an Authentication
// Method in the CONNECT, the Client MUST NOT send an AUTH packet to the
// Server"; one that does commits a Protocol Error, and [MQTT-4.13.1-1]
// the server closes the connection, with DISCONNECT 0x82 (Protocol
// Error) before it. Both an AUTH that continues an authentication (0x18)
// and one that asks for a new one (0x19) are answered so.
func TestMQTT_4_12_0_7_AuthWithoutAuthenticationMethod(t *testing.T) {
	addr := start(t, server.Config{})
	for _, reason := range []byte{0x18, 0x19} {
		c, _ := connectOK(t, addr, "auth", true, packets.Properties{})
		c.write(packet(0xf0, []byte{reason}, properties(append([]byte{0x15}, str([]byte("SCRAM-SHA-1"))...))))
		c.disconnected(packets.ErrProtocolViolation.Code)
	}
}
