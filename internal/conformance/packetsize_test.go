package conformance

import (
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// [MQTT-3.14.2-3] "The sender MUST NOT send this Property [Reason
// String] if it would increase the size of the DISCONNECT packet beyond
// the Maximum Packet Size specified by the receiver", and the same of
// PUBACK [MQTT-3.4.2-2]: a client with a Maximum Packet Size of 16 is
// refused a publish (PUBACK 0x87) and disconnected for a second CONNECT
// (DISCONNECT 0x82) with packets that leave out the reason strings the
// server would add, instead of packets it must not send (or none).
func TestMQTT_3_14_2_3_ReasonStringLeftOutToFitTheClientsMaximum(t *testing.T) {
	addr := start(t, server.Config{})
	const forged = "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/00/command/notify/00"
	// Without a maximum, the refusal says why.
	w, _ := connectOK(t, addr, "wide", true, packets.Properties{RequestProblemInfo: 1, RequestProblemInfoFlag: true})
	if ack := w.publish(msg(forged, 1, "forged")); ack.ReasonCode != packets.ErrNotAuthorized.Code || ack.Properties.ReasonString == "" {
		t.Fatalf("PUBACK %#x with reason string %q, want 0x87 with one", ack.ReasonCode, ack.Properties.ReasonString)
	}
	c, _ := connectOK(t, addr, "tiny", true, packets.Properties{MaximumPacketSize: 16, RequestProblemInfo: 1, RequestProblemInfoFlag: true})
	ack := c.publish(msg(forged, 1, "forged"))
	if ack.ReasonCode != packets.ErrNotAuthorized.Code {
		t.Fatalf("PUBACK %#x, want 0x87", ack.ReasonCode)
	}
	if ack.Properties.ReasonString != "" {
		t.Fatalf("PUBACK of %d bytes with reason string %q", ack.FixedHeader.Remaining+2, ack.Properties.ReasonString)
	}
	c.send(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect:     packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: "tiny", Clean: true},
	})
	pk := c.recvType(packets.Disconnect)
	if pk.ReasonCode != packets.ErrProtocolViolationSecondConnect.Code || pk.FixedHeader.Remaining+2 > 16 {
		t.Fatalf("DISCONNECT %#x of %d bytes (reason string %q)", pk.ReasonCode, pk.FixedHeader.Remaining+2, pk.Properties.ReasonString)
	}
	c.closed()
}
