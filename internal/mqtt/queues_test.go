// SPDX-License-Identifier: MIT

package mqtt

import (
	"io"
	"log/slog"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

func testQueues(maxSession, maxTotal int64) *Queues {
	return newQueues(&Options{MaxSessionQueueBytes: maxSession, MaxQueuedBytes: maxTotal},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// queuedMessage is a QoS 1 message queued for a session, never sent,
// with a payload of n bytes.
func queuedMessage(id uint16, n int) *packets.Packet {
	return &packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1},
		PacketID: id, TopicName: "t", Payload: make([]byte, n), Queued: true}
}

func ids(pks []packets.Packet) []uint16 {
	var out []uint16
	for _, pk := range pks {
		out = append(out, pk.PacketID)
	}
	return out
}

func TestHeldBytesCountsPayloadTopicAndProperties(t *testing.T) {
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: "a/b", Payload: []byte("12345"),
		Properties: packets.Properties{CorrelationData: []byte("cd"), ResponseTopic: "r", ContentType: "ct",
			SubscriptionIdentifier: []int{1, 2}, User: []packets.UserProperty{{Key: "k", Val: "vv"}}}}
	u := packets.UserProperty{}
	want := int64(5+3+2+1+2+2*8+int(unsafe.Sizeof(u))+1+2) + entryOverhead
	require.Equal(t, want, heldBytes(&pk))
	require.Zero(t, heldBytes(&packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrel}, PacketID: 1}))
}

// The oldest messages never sent make room for a new one; the others
// stay, in their order.
func TestInflightQueueDropsTheOldestForTheSessionBound(t *testing.T) {
	size := heldBytes(queuedMessage(1, 100))
	i := NewInflights()
	i.queues = testQueues(3*size, 0)
	for id := uint16(1); id <= 5; id++ {
		dropped, refused := i.queue(queuedMessage(id, 100))
		require.Equal(t, withinLimits, refused)
		if id <= 3 {
			require.Empty(t, dropped)
			continue
		}
		require.Len(t, dropped, 1)
		require.Equal(t, id-3, dropped[0].pk.PacketID, "the oldest is dropped")
		require.Equal(t, sessionLimit, dropped[0].limit)
		require.True(t, dropped[0].held)
	}
	require.Equal(t, []uint16{3, 4, 5}, ids(i.GetAll(false)))
	require.Equal(t, 3*size, i.Bytes())

	// A larger message takes the room of two.
	dropped, refused := i.queue(queuedMessage(6, 100+int(size)))
	require.Equal(t, withinLimits, refused)
	require.Equal(t, []uint16{3, 4}, []uint16{dropped[0].pk.PacketID, dropped[1].pk.PacketID})
	require.Equal(t, []uint16{5, 6}, ids(i.GetAll(false)))
	require.Equal(t, 3*size, i.Bytes())

	// One larger than the bound is refused, and nothing is dropped for it.
	dropped, refused = i.queue(queuedMessage(7, int(3*size)))
	require.Equal(t, sessionLimit, refused)
	require.Empty(t, dropped)
	require.Equal(t, []uint16{5, 6}, ids(i.GetAll(false)))
}

// A message sent and not acknowledged keeps its packet id: it is never
// dropped, and counts.
func TestInflightQueueNeverDropsWhatWasSent(t *testing.T) {
	size := heldBytes(queuedMessage(1, 100))
	i := NewInflights()
	i.queues = testQueues(2*size, 0)
	sent := queuedMessage(1, 100)
	sent.Queued = false
	i.Set(sent)
	_, refused := i.queue(queuedMessage(2, 100))
	require.Equal(t, withinLimits, refused)
	dropped, refused := i.queue(queuedMessage(3, 100))
	require.Equal(t, withinLimits, refused)
	require.Equal(t, uint16(2), dropped[0].pk.PacketID)
	require.Equal(t, []uint16{1, 3}, ids(i.GetAll(false)))

	// A parked message was never sent either.
	parked := queuedMessage(3, 100)
	parked.Queued, parked.Expiry = false, -1
	i.Set(parked)
	dropped, _ = i.queue(queuedMessage(4, 100))
	require.Equal(t, uint16(3), dropped[0].pk.PacketID)

	_, refused = i.queue(queuedMessage(5, 100+int(size)))
	require.Equal(t, sessionLimit, refused, "only the sent message would be left")
	require.Equal(t, []uint16{1, 4}, ids(i.GetAll(false)))
}

// Past the bound of all sessions, the session being fed loses its oldest
// messages; the others keep theirs.
func TestInflightQueueDropsFromTheSessionBeingFedForTheTotalBound(t *testing.T) {
	size := heldBytes(queuedMessage(1, 100))
	q := testQueues(0, 4*size)
	a, b := NewInflights(), NewInflights()
	a.queues, b.queues = q, q
	a.goOffline()
	b.goOffline()
	for id := uint16(1); id <= 3; id++ {
		_, refused := a.queue(queuedMessage(id, 100))
		require.Equal(t, withinLimits, refused)
	}
	_, refused := b.queue(queuedMessage(1, 100))
	require.Equal(t, withinLimits, refused)
	require.Equal(t, 4*size, q.Bytes())

	dropped, refused := b.queue(queuedMessage(2, 100))
	require.Equal(t, withinLimits, refused)
	require.Len(t, dropped, 1)
	require.Equal(t, totalLimit, dropped[0].limit)
	require.Equal(t, []uint16{2}, ids(b.GetAll(false)))
	require.Equal(t, []uint16{1, 2, 3}, ids(a.GetAll(false)), "another session is not touched")
	require.Equal(t, 4*size, q.Bytes())

	// A session with nothing to drop is refused.
	c := NewInflights()
	c.queues = q
	c.goOffline()
	dropped, refused = c.queue(queuedMessage(1, 100))
	require.Equal(t, totalLimit, refused)
	require.Empty(t, dropped)
	require.Zero(t, c.Len())
	require.Equal(t, 4*size, q.Bytes())
}

// The queued memory follows the sessions exactly: a session counts from
// the end of its connection until it is resumed (its clone does not
// count), and what is acknowledged, expires or is cleared is let go of.
func TestQueuedBytesFollowTheSessions(t *testing.T) {
	size := heldBytes(queuedMessage(1, 100))
	q := testQueues(0, 0)
	i := NewInflights()
	i.queues = q
	sent := queuedMessage(1, 100)
	sent.Queued = false
	i.Set(sent)
	require.Zero(t, q.Bytes(), "a session with a connection")
	require.Empty(t, i.goOffline())
	require.Equal(t, size, q.Bytes())
	i.queue(queuedMessage(2, 100))
	i.queue(queuedMessage(3, 100))
	require.Equal(t, 3*size, q.Bytes())
	require.True(t, i.Delete(2)) // expired, say
	require.Equal(t, 2*size, q.Bytes())

	// Resumed: the clone holds the messages, as a session with a
	// connection; the old session lets go of them.
	c := i.Clone()
	require.Equal(t, 2*size, c.Bytes())
	for _, pk := range i.GetAll(false) {
		i.DeletePacket(&pk)
	}
	i.detach()
	require.Zero(t, q.Bytes())
	i.Set(queuedMessage(9, 100)) // a late delivery to the old session
	require.Zero(t, q.Bytes())

	// Delivered and acknowledged.
	pk, ok := c.Get(3)
	require.True(t, ok)
	pk.Queued = false
	c.Set(&pk)
	require.Equal(t, 2*size, c.Bytes())
	require.True(t, c.Delete(3))
	require.True(t, c.Delete(1))
	require.Zero(t, c.Bytes())

	// A PUBREL replaces its PUBLISH and holds nothing.
	c.Set(queuedMessage(4, 100))
	c.Set(&packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrel}, PacketID: 4})
	require.Zero(t, c.Bytes())
}

// Going offline, a session past its bound keeps its newest messages.
func TestGoOfflineEnforcesTheBounds(t *testing.T) {
	size := heldBytes(queuedMessage(1, 100))
	q := testQueues(2*size, 3*size)
	other := NewInflights()
	other.queues = q
	other.goOffline()
	other.queue(queuedMessage(1, 100))

	i := NewInflights()
	i.queues = q
	for id := uint16(1); id <= 4; id++ {
		parked := queuedMessage(id, 100)
		parked.Queued, parked.Expiry = false, -1
		i.Set(parked)
	}
	dropped := i.goOffline()
	require.Len(t, dropped, 2)
	require.Equal(t, []uint16{3, 4}, ids(i.GetAll(false)))
	require.Equal(t, 3*size, q.Bytes())

	// Resumed (by a new connection, which has a clone) and offline
	// again with one more: the session's bound drops one, and the total
	// has room for the rest. While connected, its messages never sent
	// are held.
	resumed := i.Clone()
	i.detach()
	resumed.Set(queuedMessage(5, 100))
	require.Equal(t, size, q.Bytes())
	require.Equal(t, 3*size, q.Held())
	dropped = resumed.goOffline()
	require.Len(t, dropped, 1)
	require.Equal(t, uint16(3), dropped[0].pk.PacketID)
	require.Equal(t, sessionLimit, dropped[0].limit)
	require.Equal(t, []uint16{4, 5}, ids(resumed.GetAll(false)))
	require.Equal(t, 3*size, q.Bytes())
	require.Zero(t, q.Held())
}

// Messages are kept in the order they came, also within one second.
func TestInflightKeepsTheOrderOfItsMessages(t *testing.T) {
	i := NewInflights()
	for _, id := range []uint16{9, 3, 7, 1, 5} {
		i.Set(&packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, PacketID: id, Created: 100})
	}
	require.Equal(t, []uint16{9, 3, 7, 1, 5}, ids(i.GetAll(false)))
	c := i.Clone()
	require.Equal(t, []uint16{9, 3, 7, 1, 5}, ids(c.GetAll(false)))
	pk, _ := c.Get(7)
	pk.Expiry = -1
	c.Set(&pk)
	pk, _ = c.Get(9)
	pk.Expiry = -1
	c.Set(&pk)
	next, ok := c.NextImmediate()
	require.True(t, ok)
	require.Equal(t, uint16(9), next.PacketID, "the oldest parked message")
}
