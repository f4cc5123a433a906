// SPDX-License-Identifier: MIT

//go:build linux

package mqtt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// A read loop queues the PUBACK of a QoS 1 publish behind the deliveries
// of its round (ackAfterRound). Publishes pipelined in one write stay on
// the loop (the turn's own acknowledgements do not send the connection
// back to its goroutine), every subscriber gets every message in order,
// and the publisher every PUBACK in the order of its publishes
// [MQTT-4.6.0-2].
func TestAReadLoopAcknowledgesPipelinedPublishesInOrder(t *testing.T) {
	if !ReadLoopsAvailable {
		t.Skip("no read loops here")
	}
	s, addr := loopServer(t, new(echoHook), 0)
	sub := dialLoop(t, addr, "sub", 30)
	sub.subscribe(1, "pipe/#", 0)
	pub := dialLoop(t, addr, "pub", 30)
	cl, ok := s.Clients.Get("pub")
	require.True(t, ok)

	const rounds, perWrite = 20, 10
	before := handedBack(s)
	id := uint16(0)
	for r := 0; r < rounds; r++ {
		require.Eventually(t, func() bool { return cl.Net.loop.parked.Load() }, 5*time.Second, time.Millisecond)
		var buf bytes.Buffer
		for range perWrite {
			id++
			appendPublishQoS1(t, &buf, id, "pipe/x", fmt.Appendf(nil, "%05d", id))
		}
		pub.write(buf.Bytes())
		for want := id - perWrite + 1; want <= id; want++ {
			typ, body := pub.read()
			require.Equal(t, packets.Puback, typ)
			require.Equal(t, want, binary.BigEndian.Uint16(body), "PUBACKs out of the order of the publishes")
		}
		for want := id - perWrite + 1; want <= id; want++ {
			typ, body := sub.read()
			require.Equal(t, packets.Publish, typ)
			got := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, ProtocolVersion: 5}
			require.NoError(t, got.PublishDecode(body))
			require.Equal(t, fmt.Sprintf("%05d", want), string(got.Payload))
		}
	}
	require.Equal(t, before, handedBack(s), "pipelined publishes handed back to the connection's goroutine")
	require.Eventually(t, func() bool { return cl.State.outbound.held.Load() == 0 }, 5*time.Second, time.Millisecond)
}

// The PUBACKs a read loop queued come before those of every later
// publish of the connection, whoever acknowledges it: a request answered
// in the same turn, the connection's goroutine after a SUBSCRIBE sent it
// back there, or a refusal [MQTT-4.6.0-2]. Each write mixes them in one
// segment, so that one turn reads them all.
func TestQueuedAcknowledgementsComeBeforeLaterOnes(t *testing.T) {
	if !ReadLoopsAvailable {
		t.Skip("no read loops here")
	}
	_, addr := loopServer(t, new(echoHook), 0)
	sub := dialLoop(t, addr, "sub", 30)
	sub.subscribe(1, "mixed/#", 0)
	pub := dialLoop(t, addr, "pub", 30)

	publish := func(buf *bytes.Buffer, id uint16, topic string) {
		appendPublishQoS1(t, buf, id, topic, []byte("m"))
	}
	for r := 0; r < 20; r++ {
		base := uint16(r*10 + 1)
		var buf bytes.Buffer
		publish(&buf, base, "mixed/a")   // routed: its PUBACK queued
		publish(&buf, base+1, "mixed/b") // routed: its PUBACK queued
		pub.next = base + 1
		buf.Write(pub.request([]byte("q"))) // answered with its PUBACK by the consumer
		publish(&buf, base+3, "$SYS/x")     // a topic the server refuses: PUBACK 0x90
		subscribe := packets.Packet{
			FixedHeader:     packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
			ProtocolVersion: 5,
			PacketID:        base + 4,
			Filters:         packets.Subscriptions{{Filter: fmt.Sprintf("other/%d", r)}},
		}
		require.NoError(t, subscribe.SubscribeEncode(&buf))
		publish(&buf, base+5, "mixed/c") // after the SUBSCRIBE: the goroutine's
		publish(&buf, base+6, "$SYS/y")  // refused by the goroutine
		pub.write(buf.Bytes())

		var acks []uint16
		for len(acks) < 6 {
			typ, body := pub.read()
			switch typ {
			case packets.Puback:
				id := binary.BigEndian.Uint16(body)
				acks = append(acks, id)
				if id == base+3 || id == base+6 {
					require.Greater(t, len(body), 2, "round %d: PUBACK %d without its reason code", r, id)
					require.Equal(t, packets.ErrTopicNameInvalid.Code, body[2], "round %d: PUBACK %d", r, id)
				}
			case packets.Publish, packets.Suback:
			default:
				t.Fatalf("round %d: a packet of type %d", r, typ)
			}
		}
		require.Equal(t, []uint16{base, base + 1, base + 2, base + 3, base + 5, base + 6}, acks, "round %d", r)
	}
}

// appendPublishQoS1 appends an MQTT 5 PUBLISH of QoS 1 to buf.
func appendPublishQoS1(t *testing.T, buf *bytes.Buffer, id uint16, topic string, payload []byte) {
	t.Helper()
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish, Qos: 1},
		ProtocolVersion: 5,
		TopicName:       topic,
		PacketID:        id,
		Payload:         payload,
	}
	require.NoError(t, pk.PublishEncode(buf))
}
