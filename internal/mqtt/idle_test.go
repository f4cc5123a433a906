// SPDX-License-Identifier: MIT

//go:build linux

package mqtt

import (
	"bytes"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// connectionGoroutines counts the goroutines that read or write a
// client's connection, from the goroutine profile.
func connectionGoroutines(t *testing.T) int {
	var b bytes.Buffer
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&b, 2))
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "mqtt.(*Server).readClient") || strings.Contains(g, "mqtt.(*Client).writeOut") {
			n++
		}
	}
	return n
}

// idle reports whether cl holds nothing an idle connection does not
// need: it is parked in its read loop, without a read buffer, a writer
// or anything queued.
func idle(cl *Client) bool {
	// Under the connection's loop lock, while the loop reads it: no turn
	// is under way (a turn lends it the loop's reader), and no goroutine
	// took it back.
	var parked bool
	cl.Net.loop.member.WithoutTurn(func(inLoop bool) {
		parked = inLoop && cl.Net.bconn == nil
	})
	if !parked {
		return false
	}
	q := &cl.State.outbound
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.writer && !q.writing && len(q.items) == 0 && cap(q.items) <= 64
}

// subscribePacket is a SUBSCRIBE to filter at QoS 0, encoded.
func subscribePacket(t *testing.T, id uint16, filter string) []byte {
	sub := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
		ProtocolVersion: 5,
		PacketID:        id,
		Filters:         packets.Subscriptions{{Filter: filter}},
	}
	var buf bytes.Buffer
	require.NoError(t, sub.SubscribeEncode(&buf))
	return buf.Bytes()
}

// publishPacket is a QoS 0 PUBLISH of payload to topic, encoded.
func publishPacket(t *testing.T, topic string, payload []byte) []byte {
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish},
		ProtocolVersion: 5,
		TopicName:       topic,
		Payload:         payload,
	}
	var buf bytes.Buffer
	require.NoError(t, pk.PublishEncode(&buf))
	return buf.Bytes()
}

// TestIdleConnectionsHoldNoGoroutineNorBuffer takes connections from
// idle to busy and back, twice: idle, each is parked in its read loop
// with no goroutine, no read buffer and no writer; busy (a subscription,
// then a burst of messages to it), each is served and answered; idle
// again (after its next packet at the latest), it has given all of that
// back.
func TestIdleConnectionsHoldNoGoroutineNorBuffer(t *testing.T) {
	h := new(echoHook)
	s, addr := loopServer(t, h, 0)
	const n = 20
	peers := make([]*loopPeer, n)
	clients := make([]*Client, n)
	for i := range peers {
		id := fmt.Sprintf("c%d", i)
		peers[i] = dialLoop(t, addr, id, 60)
		var ok bool
		clients[i], ok = s.Clients.Get(id)
		require.True(t, ok)
	}
	// allIdle waits until every connection is idle. A connection that
	// had writes queued when it read its last packet parks at its next
	// one: a client that is not idle yet sends a PINGREQ, as it would
	// within its keepalive.
	allIdle := func(phase string) {
		t.Helper()
		defer func() {
			if t.Failed() {
				logConnections(t, clients)
			}
		}()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			done := true
			for i, cl := range clients {
				if !idle(cl) {
					done = false
					peers[i].write([]byte{packets.Pingreq << 4, 0})
					typ, _ := peers[i].read()
					require.Equal(t, packets.Pingresp, typ)
				}
			}
			if done && connectionGoroutines(t) == 0 {
				return
			}
			require.True(t, time.Now().Before(deadline), "%s: every connection parked, with no goroutine, read buffer or writer", phase)
		}
	}
	allIdle("connected")

	for round := range 2 {
		// Busy: each subscribes (its goroutine handles the SUBSCRIBE),
		// then the next one sends it a burst of messages, which it
		// reads.
		for i, p := range peers {
			p.write(subscribePacket(t, uint16(100+round), fmt.Sprintf("to/%d/%d", i, round)))
			typ, _ := p.read()
			require.Equal(t, packets.Suback, typ)
		}
		const burst = 300
		payload := bytes.Repeat([]byte{'m'}, 200)
		for i := range peers {
			var all []byte
			for range burst {
				all = append(all, publishPacket(t, fmt.Sprintf("to/%d/%d", i, round), payload)...)
			}
			peers[(i+1)%n].write(all)
		}
		for _, p := range peers {
			for j := range burst {
				typ, body := p.read()
				require.Equal(t, packets.Publish, typ, "message %d", j)
				require.True(t, bytes.HasSuffix(body, payload))
			}
		}
		allIdle(fmt.Sprintf("round %d", round))
	}
	for i := range peers {
		_, ok := h.disconnectError(fmt.Sprintf("c%d", i))
		require.False(t, ok)
	}
}

// logConnections logs the state of every client and the goroutines, for
// a test that failed.
func logConnections(t *testing.T, clients []*Client) {
	for _, cl := range clients {
		q := &cl.State.outbound
		q.mu.Lock()
		t.Logf("%s parked=%v writer=%v writing=%v items=%d cap=%d qty=%d", cl.ID, cl.Net.loop.parked.Load(), q.writer, q.writing, len(q.items), cap(q.items), atomic.LoadInt32(&cl.State.outboundQty))
		q.mu.Unlock()
	}
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	t.Log(b.String())
}
