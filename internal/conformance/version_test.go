package conformance

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// [MQTT-3.1.2-2] "If the Protocol Version is not 5 and the Server does not
// want to accept the CONNECT packet, the Server MAY send a CONNACK packet
// with Reason Code 0x84 (Unsupported Protocol Version) and then MUST close
// the Network Connection": a later version than 5 (6, 255) gets an MQTT 5
// CONNACK 0x84, not a Protocol Error (0x82). An earlier version the
// server does not speak (0, 2, and 3 under the name "MQTT", which is
// MQTT 3.1's version under its name "MQIsdp") gets MQTT 3.1.1's CONNACK
// 0x01 (unacceptable protocol version, its [MQTT-3.1.2-2]), which its
// client can read.
func TestMQTT_3_1_2_2_UnsupportedProtocolVersion(t *testing.T) {
	addr := start(t, server.Config{})
	for _, version := range []byte{6, 255} {
		c := dial(t, addr)
		c.write(rawConnect(version, "future", nil))
		ack := c.recvType(packets.Connack)
		if ack.ReasonCode != packets.ErrUnsupportedProtocolVersion.Code {
			t.Fatalf("version %d: CONNACK %#x (%s), want 0x84", version, ack.ReasonCode, ack.Properties.ReasonString)
		}
		c.closed()
	}
	for _, version := range []byte{0, 2, 3} {
		c := dial(t, addr)
		c.write(packet(0x10, str([]byte("MQTT")), []byte{version, 0x02}, u16(30), str([]byte("past"))))
		got := make([]byte, 4)
		_ = c.conn.SetReadDeadline(time.Now().Add(wait))
		if _, err := io.ReadFull(c.r, got); err != nil {
			t.Fatalf("version %d: %v", version, err)
		}
		if want := []byte{packets.Connack << 4, 2, 0, packets.Err3UnsupportedProtocolVersion.Code}; !bytes.Equal(got, want) {
			t.Fatalf("version %d: got % x, want the MQTT 3.1.1 CONNACK % x", version, got, want)
		}
		c.closed()
	}
}
