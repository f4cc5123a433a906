package conformance

import (
	"testing"
	"time"

	"github.com/dssio/dss/internal/broker"
	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// capabilities returns the default capabilities changed by change.
func capabilities(change func(*broker.Capabilities)) *broker.Capabilities {
	c := broker.DefaultCapabilities()
	change(&c)
	return &c
}

// [MQTT-3.2.2-15] "The Client MUST NOT send packets exceeding Maximum
// Packet Size to the Server": the server announces its maximum in
// CONNACK, and a packet over it ends the connection with DISCONNECT 0x95
// (Packet too large). The size is the whole packet's, its fixed header
// included (3.2.2.3.6): a packet of exactly the maximum is taken, one of
// a byte more is not.
func TestMQTT_3_2_2_15_MaximumPacketSize(t *testing.T) {
	addr := start(t, server.Config{MaxPacketSize: 2048})
	c, ack := connectOK(t, addr, "big", true, packets.Properties{})
	if ack.Properties.MaximumPacketSize != 2048 {
		t.Fatalf("CONNACK Maximum Packet Size %d, want 2048", ack.Properties.MaximumPacketSize)
	}
	sized := func(total int) packets.Packet {
		pk := msg("a/b", 0, "")
		// The remaining length takes two bytes instead of one.
		pk.Payload = make([]byte, total-len(encode(t, pk))-1)
		if n := len(encode(t, pk)); n != total {
			t.Fatalf("a PUBLISH of %d bytes, want %d", n, total)
		}
		return pk
	}
	c.send(sized(2048))
	c.ping()
	c.send(sized(2049))
	c.disconnected(packets.ErrPacketTooLarge.Code)
}

// [MQTT-3.1.2-24] "The Server MUST NOT send packets exceeding Maximum
// Packet Size to the Client" and [MQTT-3.1.2-25] "Where a Packet is too
// large to send, the Server MUST discard it without sending it": a
// subscriber with a Maximum Packet Size of 128 gets the small message and
// not the large one.
func TestMQTT_3_1_2_24_ClientMaximumPacketSize(t *testing.T) {
	addr := start(t, server.Config{})
	s, _ := connectOK(t, addr, "small", true, packets.Properties{MaximumPacketSize: 128})
	s.subscribe(1, 0, sub("m/#", 0))
	p, _ := connectOK(t, addr, "pub", true, packets.Properties{})
	p.publish(msg("m/big", 0, string(make([]byte, 512))))
	p.publish(msg("m/small", 0, "x"))
	if got := s.recvType(packets.Publish); got.TopicName != "m/small" {
		t.Fatalf("got %q, want only m/small", got.TopicName)
	}
	s.nothing()
}

// [MQTT-3.2.2-21] "If the Server returns a Server Keep Alive on the
// CONNACK packet, the Client MUST use that value instead of the value it
// sent as the Keep Alive": with --max-keepalive 2s, a client that asks
// for more, or for none, is given 2; one that asks for 1 keeps it; and the
// server holds the client to the value [MQTT-3.1.2-22] ("If the Keep
// Alive value is non-zero and the Server does not receive an MQTT Control
// Packet from the Client within one and a half times the Keep Alive time
// period, it MUST close the Network Connection").
func TestMQTT_3_2_2_21_ServerKeepAlive(t *testing.T) {
	addr := start(t, server.Config{Capabilities: capabilities(func(c *broker.Capabilities) { c.MaxKeepAlive = 2 * time.Second })})
	for _, tc := range []struct {
		asked uint16
		given uint16 // 0: no Server Keep Alive
	}{{60, 2}, {0, 2}, {1, 0}} {
		_, ack := connect(t, addr, "ka", true, tc.asked, packets.Properties{})
		if tc.given == 0 && ack.Properties.ServerKeepAliveFlag {
			t.Fatalf("keep alive %d: Server Keep Alive %d, want none", tc.asked, ack.Properties.ServerKeepAlive)
		}
		if tc.given != 0 && (!ack.Properties.ServerKeepAliveFlag || ack.Properties.ServerKeepAlive != tc.given) {
			t.Fatalf("keep alive %d: Server Keep Alive %d (%v), want %d", tc.asked, ack.Properties.ServerKeepAlive, ack.Properties.ServerKeepAliveFlag, tc.given)
		}
	}
	// Silent past 1.5 times the server's keep alive: closed.
	c, _ := connect(t, addr, "silent", true, 600, packets.Properties{})
	c.closed()
}

// [MQTT-3.2.2-9] "If a Server does not support QoS 1 or QoS 2 PUBLISH
// packets it MUST send a Maximum QoS in the CONNACK packet specifying the
// highest QoS it supports"; a PUBLISH above it gets DISCONNECT 0x9B (QoS
// not supported, 3.2.2.3.4), and a subscription above it is granted the
// maximum [MQTT-3.2.2-10] (the server must accept a SUBSCRIBE with a
// higher QoS).
func TestMQTT_3_2_2_9_MaximumQoS(t *testing.T) {
	addr := start(t, server.Config{Capabilities: capabilities(func(c *broker.Capabilities) { c.MaxQoS = 1 })})
	c, ack := connectOK(t, addr, "q", true, packets.Properties{})
	if !ack.Properties.MaximumQosFlag || ack.Properties.MaximumQos != 1 {
		t.Fatalf("CONNACK Maximum QoS %d (%v), want 1", ack.Properties.MaximumQos, ack.Properties.MaximumQosFlag)
	}
	if codes := c.subscribe(1, 0, sub("q/#", 2)); codes[0] != 1 {
		t.Fatalf("SUBACK %#x, want granted QoS 1", codes[0])
	}
	c.send(msg("q/x", 2, "two"))
	c.disconnected(packets.ErrQosNotSupported.Code)
}

// [MQTT-3.2.2-12] "If a Server receives a CONNECT packet containing a
// Will QoS that exceeds its capabilities, it MUST reject the connection"
// (CONNACK 0x9B).
func TestMQTT_3_2_2_12_WillQoSAboveMaximum(t *testing.T) {
	addr := start(t, server.Config{Capabilities: capabilities(func(c *broker.Capabilities) { c.MaxQoS = 1 })})
	c := dial(t, addr)
	c.send(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: "w", Clean: true,
			WillFlag: true, WillQos: 2, WillTopic: "w/t", WillPayload: []byte("gone")},
	})
	if ack := c.recvType(packets.Connack); ack.ReasonCode != packets.ErrQosNotSupported.Code {
		t.Fatalf("CONNACK %#x, want 0x9B", ack.ReasonCode)
	}
}

// [MQTT-3.2.2-13] "If a Server receives a CONNECT packet containing a
// Will Message with the Will Retain set to 1, and it does not support
// retained messages, the Server MUST reject the connection request" (CONNACK
// 0x9A); Retain Available 0 is announced, and a PUBLISH with RETAIN gets
// DISCONNECT 0x9A (3.2.2.3.5).
func TestMQTT_3_2_2_13_RetainNotAvailable(t *testing.T) {
	addr := start(t, server.Config{Capabilities: capabilities(func(c *broker.Capabilities) { c.RetainAvailable = false })})
	c, ack := connectOK(t, addr, "r", true, packets.Properties{})
	if !ack.Properties.RetainAvailableFlag || ack.Properties.RetainAvailable != 0 {
		t.Fatalf("CONNACK Retain Available %d (%v), want 0", ack.Properties.RetainAvailable, ack.Properties.RetainAvailableFlag)
	}
	m := msg("r/x", 0, "kept?")
	m.FixedHeader.Retain = true
	c.send(m)
	c.disconnected(packets.ErrRetainNotSupported.Code)

	w := dial(t, addr)
	w.send(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: "w", Clean: true,
			WillFlag: true, WillRetain: true, WillTopic: "w/t", WillPayload: []byte("gone")},
	})
	if ack := w.recvType(packets.Connack); ack.ReasonCode != packets.ErrRetainNotSupported.Code {
		t.Fatalf("CONNACK %#x, want 0x9A", ack.ReasonCode)
	}
}

// [MQTT-4.12.0-1] "If the Server does not support the Authentication
// Method supplied by the Client, it MAY send a CONNACK with a Reason Code
// of 0x8C (Bad authentication method) or 0x87 (Not Authorized) ... and
// MUST close the Network Connection": dss supports no enhanced
// authentication, so a CONNECT naming a method gets CONNACK 0x8C and the
// end of its connection, and nothing of it is kept.
func TestMQTT_4_12_0_1_UnsupportedAuthenticationMethod(t *testing.T) {
	addr := start(t, server.Config{})
	c := dial(t, addr)
	c.send(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect:     packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: "sat", Clean: true},
		Properties:  packets.Properties{AuthenticationMethod: "K8S-SAT", AuthenticationData: []byte("token")},
	})
	if ack := c.recvType(packets.Connack); ack.ReasonCode != packets.ErrBadAuthenticationMethod.Code {
		t.Fatalf("CONNACK %#x, want 0x8C", ack.ReasonCode)
	}
	c.closed()
	// The same client without a method is served.
	connectOK(t, addr, "sat", true, packets.Properties{})
}

// [MQTT-3.1.3-6] "A Server MAY allow a Client to supply a ClientID that
// has a length of zero bytes, however if it does so the Server MUST treat
// this as a special case and assign a unique ClientID to that Client",
// and [MQTT-3.2.2-16] "... it MUST return the Assigned Client Identifier
// in the CONNACK".
func TestMQTT_3_1_3_6_AssignedClientIdentifier(t *testing.T) {
	addr := start(t, server.Config{})
	_, a := connectOK(t, addr, "", true, packets.Properties{})
	_, b := connectOK(t, addr, "", true, packets.Properties{})
	if a.Properties.AssignedClientID == "" || a.Properties.AssignedClientID == b.Properties.AssignedClientID {
		t.Fatalf("assigned client ids %q and %q", a.Properties.AssignedClientID, b.Properties.AssignedClientID)
	}
}

// [MQTT-3.2.2-2] "If the Server accepts a connection with Clean Start set
// to 1, the Server MUST set Session Present to 0"; [MQTT-3.2.2-3] "If the
// Server accepts a connection with Clean Start set to 0 and the Server has
// Session State for the ClientID, it MUST set Session Present to 1";
// [MQTT-3.1.2-23] the session is kept after the connection closes when
// the Session Expiry Interval is above 0, and its subscriptions with it.
func TestMQTT_3_2_2_3_SessionPresent(t *testing.T) {
	addr := start(t, server.Config{})
	c, ack := connectOK(t, addr, "s", true, session())
	if ack.SessionPresent {
		t.Fatal("session present with clean start")
	}
	c.subscribe(1, 0, sub("s/#", 1))
	c.bye()

	c, ack = connectOK(t, addr, "s", false, session())
	if !ack.SessionPresent {
		t.Fatal("session not present after a disconnect with session expiry 3600")
	}
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	p.publish(msg("s/x", 1, "kept"))
	if got := c.recvType(packets.Publish); got.TopicName != "s/x" {
		t.Fatalf("got %q", got.TopicName)
	}
}

// [MQTT-3.1.2-23] with a Session Expiry Interval of 0 the session ends
// with the connection: the next connection without Clean Start finds no
// session (Session Present 0) and no subscription.
func TestMQTT_3_1_2_23_SessionEndsWithExpiryZero(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "z", true, packets.Properties{})
	c.subscribe(1, 0, sub("z/#", 1))
	c.bye()
	var ack packets.Packet
	for i := 0; ; i++ { // the end of the first connection is processed asynchronously
		c, ack = connectOK(t, addr, "z", false, packets.Properties{})
		if !ack.SessionPresent || i > 100 {
			break
		}
		c.bye()
		time.Sleep(10 * time.Millisecond)
	}
	if ack.SessionPresent {
		t.Fatal("session present after expiry 0")
	}
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	p.publish(msg("z/x", 1, "gone"))
	c.nothing()
}

// [MQTT-3.1.0-2] "The Server MUST process a second CONNECT packet sent
// from a Client as a Protocol Error and close the Network Connection"
// (DISCONNECT 0x82).
func TestMQTT_3_1_0_2_SecondConnect(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "twice", true, packets.Properties{})
	c.send(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect:     packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: "twice", Clean: true},
	})
	c.disconnected(packets.ErrProtocolViolationSecondConnect.Code)
}

// [MQTT-3.1.4-3] "If the ClientID represents a Client already connected
// to the Server, the Server sends a DISCONNECT packet to the existing
// Client with Reason Code of 0x8E (Session taken over) ... and MUST close
// the Network Connection of the existing Client".
func TestMQTT_3_1_4_3_SessionTakenOver(t *testing.T) {
	addr := start(t, server.Config{})
	old, _ := connectOK(t, addr, "same", true, packets.Properties{})
	connectOK(t, addr, "same", true, packets.Properties{})
	old.disconnected(packets.ErrSessionTakenOver.Code)
}

// [MQTT-3.1.2-28] "A value of 0 indicates that the Server MUST NOT return
// Response Information": without Request Response Information the CONNACK
// has none.
func TestMQTT_3_1_2_28_NoResponseInformation(t *testing.T) {
	addr := start(t, server.Config{})
	_, ack := connectOK(t, addr, "rri", true, packets.Properties{})
	if ack.Properties.ResponseInfo != "" {
		t.Fatalf("Response Information %q", ack.Properties.ResponseInfo)
	}
}
