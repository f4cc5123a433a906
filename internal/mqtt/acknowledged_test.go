package mqtt

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// TestAwaitAcknowledgementsIgnoresWhatNobodyCanAcknowledge: a session
// without a connection holding a queued message, and a connection that
// ended with a delivery unacknowledged, are not waited for.
func TestAwaitAcknowledgementsIgnoresWhatNobodyCanAcknowledge(t *testing.T) {
	s := newServer()
	offline, _, _ := newTestClient()
	offline.ID = "offline"
	offline.State.Inflight.Set(&packets.Packet{PacketID: 1, FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, Queued: true})
	offline.Stop(nil)
	s.Clients.Add(offline)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, s.AwaitAcknowledgements(ctx))
}

// TestAwaitAcknowledgementsWaitsForTheConnectedClient: a connected
// client's unacknowledged delivery is waited for until its PUBACK comes,
// and an acknowledgement the server holds for the client's own publish is
// not.
func TestAwaitAcknowledgementsWaitsForTheConnectedClient(t *testing.T) {
	s := newServer()
	cl, _, _ := newTestClient()
	cl.ID = "online"
	cl.State.Inflight.Set(&packets.Packet{PacketID: 1, FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}})
	cl.State.Inflight.Set(&packets.Packet{PacketID: 1, FixedHeader: packets.FixedHeader{Type: packets.Pubrec}})
	s.Clients.Add(cl)

	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.AwaitAcknowledgements(short), context.DeadlineExceeded)

	done := make(chan error, 1)
	ctx, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	go func() { done <- s.AwaitAcknowledgements(ctx) }()
	require.Eventually(t, s.acks.waiting.Load, time.Minute, time.Millisecond)
	require.NoError(t, s.processPacket(cl, &packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: 1}))
	require.NoError(t, <-done)
}
