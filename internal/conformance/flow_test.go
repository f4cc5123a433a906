package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/dssio/dss/internal/broker"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// [MQTT-3.3.4-7] "The Client MUST NOT send more than Receive Maximum QoS 1
// and QoS 2 PUBLISH packets for which it has not received PUBACK, PUBCOMP,
// or PUBREC with a Reason Code of 128 or greater from the Server"; one
// more gets DISCONNECT 0x93 (Receive Maximum exceeded). And
// [MQTT-3.14.4-1] "After sending a DISCONNECT packet the sender MUST NOT
// send any more MQTT Control Packets on that Network Connection", then
// closes it [MQTT-3.14.4-2]: the client, which keeps sending, reads the
// DISCONNECT and then the end of the stream, not a reset.
func TestMQTT_3_3_4_7_ReceiveMaximumExceeded(t *testing.T) {
	addr := start(t, server.Config{Capabilities: capabilities(func(c *broker.Capabilities) { c.ReceiveMaximum = 2 })})
	c, ack := connectOK(t, addr, "eager", true, packets.Properties{})
	if ack.Properties.ReceiveMaximum != 2 {
		t.Fatalf("CONNACK Receive Maximum %d, want 2", ack.Properties.ReceiveMaximum)
	}
	// QoS 2 publishes without PUBREL stay unacknowledged; the third is
	// one too many. What follows stays unread in the server's buffer.
	var burst []byte
	for id := uint16(1); id <= 3; id++ {
		m := msg("flow/x", 2, "m")
		m.PacketID = id
		burst = append(burst, encode(t, m)...)
	}
	for i := 0; i < 200; i++ {
		burst = append(burst, encode(t, msg("flow/more", 0, string(make([]byte, 1000))))...)
	}
	if _, err := c.conn.Write(burst); err != nil {
		t.Fatal(err)
	}
	for {
		pk := c.recv()
		if pk.FixedHeader.Type == packets.Pubrec {
			continue
		}
		if pk.FixedHeader.Type != packets.Disconnect || pk.ReasonCode != packets.ErrReceiveMaximum.Code {
			t.Fatalf("packet type %d reason %#x, want DISCONNECT 0x93", pk.FixedHeader.Type, pk.ReasonCode)
		}
		break
	}
	c.closed()
}

// [MQTT-3.1.3-9] "If a new Network Connection to this Session is made
// before the Will Delay Interval has passed, the Server MUST NOT send the
// Will Message"; otherwise it is published once the delay has passed
// [MQTT-3.1.2-8].
func TestMQTT_3_1_3_9_WillDelay(t *testing.T) {
	// Long enough that "back" reconnects within it on a loaded machine.
	const willDelay = 3
	addr := start(t, server.Config{})
	watch, _ := connectOK(t, addr, "watch", true, packets.Properties{})
	watch.subscribe(1, 0, sub("will/#", 0))
	willConnect := func(id string) *raw {
		c := dial(t, addr)
		c.send(packets.Packet{
			FixedHeader: packets.FixedHeader{Type: packets.Connect},
			Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: id, Keepalive: 30,
				WillFlag: true, WillTopic: "will/" + id, WillPayload: []byte("gone"),
				WillProperties: packets.Properties{WillDelayInterval: willDelay}},
			Properties: session(),
		})
		if ack := c.recvType(packets.Connack); ack.ReasonCode != 0 {
			t.Fatalf("CONNACK %#x", ack.ReasonCode)
		}
		return c
	}
	back := willConnect("back")
	gone := willConnect("gone")
	// The server sees the connections end after this: a will sent sooner
	// than the delay from here is early.
	start := time.Now()
	_ = back.conn.Close() // without DISCONNECT: the will is due after the delay
	_ = gone.conn.Close()
	willConnect("back") // in time, however slow the machine: its will is not sent
	got := watch.recvType(packets.Publish)
	if got.TopicName != "will/gone" {
		t.Fatalf("will on %q, want will/gone", got.TopicName)
	}
	if waited := time.Since(start); waited < willDelay*time.Second {
		t.Fatalf("will published %v after the connection ended, before its delay of %d s", waited, willDelay)
	}
	watch.nothing()
}

// A graceful shutdown waits for the connected clients to acknowledge what
// was sent to them, and not for messages queued for a session without a
// connection, which nothing can acknowledge before the server stops.
func TestShutdownDoesNotWaitForOfflineSessions(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	addr := s.Addr()
	c, _ := connectOK(t, addr, "offline", true, session())
	c.subscribe(1, 0, sub("q/#", 1))
	c.bye()
	p, _ := connectOK(t, addr, "p", true, packets.Properties{})
	p.publish(msg("q/x", 1, "queued"))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("shutdown waited its whole grace period for a queued message")
	}
}
