// SPDX-License-Identifier: MIT

package mqtt

import (
	"bytes"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/mqtt/packets/packettest"
)

// parkFor makes cl congested: a message waits for its receive window.
func parkFor(cl *Client, id uint16) {
	cl.State.Inflight.Set(&packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, PacketID: id, Expiry: -1})
}

// A publisher's reader waits for a congested subscriber until what waited
// for the subscriber's window was sent and acknowledged; it does not wait
// for itself, nor for a subscriber that waits itself.
func TestAPublisherWaitsForACongestedSubscriber(t *testing.T) {
	pub, _, _ := newTestClient()
	sub, _, _ := newTestClient()
	parkFor(sub, 1)

	done := make(chan struct{})
	go func() {
		pub.State.flow.slowedBy.Store(sub)
		pub.readOn()
		close(done)
	}()
	// A wait that rightly goes on gives no sign to wait for: the window
	// lets one that ended too early show.
	select {
	case <-done:
		t.Fatal("the publisher read on while its subscriber was congested")
	case <-time.After(50 * time.Millisecond):
	}
	require.Equal(t, sub, pub.State.flow.pausedOn.Load())
	require.True(t, sub.State.Inflight.Delete(1))
	sub.acknowledged()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the publisher still waits after its subscriber took what waited")
	}
	require.Nil(t, pub.State.flow.pausedOn.Load())

	// Itself, or a subscriber that waits itself: no wait.
	parkFor(pub, 2)
	start := time.Now()
	pub.waitForRoom(pub)
	parkFor(sub, 3)
	sub.State.flow.pausedOn.Store(pub)
	pub.waitForRoom(sub)
	require.Less(t, time.Since(start), maxPause/2)
}

// A subscriber that acknowledges nothing for stallLimit no longer slows
// its publishers, until it acknowledges again.
func TestAStalledSubscriberSlowsNobody(t *testing.T) {
	f := new(flowState)
	now := time.Now()
	require.False(t, f.stalledNow(now))
	require.False(t, f.stalledNow(now.Add(stallLimit/2)))
	require.True(t, f.stalledNow(now.Add(stallLimit)))
	require.True(t, f.stalledNow(now.Add(2*stallLimit)))
	f.acks.Add(1)
	require.False(t, f.stalledNow(now.Add(2*stallLimit)), "an acknowledgement ends the stall")
}

// A message for a client whose older messages wait parked goes after
// them, and both go at once when the client's window has room: one
// parked behind them waited for the client's next packet, and a
// released one was written past the write loop's queue.
func TestAMessageParkedBehindOthersGoesAfterThemWithoutWaiting(t *testing.T) {
	s := newServer()
	cl, r, w := newTestClient()
	cl.Properties.ProtocolVersion = 5
	s.Clients.Add(cl)
	older := *packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).Packet
	older.PacketID, older.Expiry, older.TopicName = 1, -1, "older"
	cl.State.Inflight.Set(&older) // parked, and the window has room again
	require.Equal(t, int32(5), atomic.LoadInt32(&cl.State.Inflight.sendQuota))

	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	pk := *packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).Packet
	pk.TopicName = "newer"
	parked, err := s.publishToClient(cl, packets.Subscription{Filter: "newer", Qos: 1}, &pk, nil)
	require.NoError(t, err)
	require.True(t, parked, "the newer message went ahead of the parked one")
	waitWritten(cl)
	_ = w.Close()
	b := <-got
	require.Less(t, bytes.Index(b, []byte("older")), bytes.Index(b, []byte("newer")))
	require.NotEqual(t, -1, bytes.Index(b, []byte("older")))
	require.False(t, cl.State.Inflight.HasParked())
	require.Equal(t, int32(3), atomic.LoadInt32(&cl.State.Inflight.sendQuota))
}
