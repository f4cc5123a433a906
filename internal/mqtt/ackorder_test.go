// SPDX-License-Identifier: MIT

package mqtt

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/mqtt/packets/packettest"
)

// A QoS 1 message is in the sessions subscribed to it by the time its
// publisher reads the PUBACK: a subscriber that resumes its session once
// the publisher has the acknowledgement gets the message.
func TestAnAcknowledgedPublishIsInTheSessionsSubscribedToIt(t *testing.T) {
	s := newServer()
	sender, r, w := newTestClient()
	sender.ID = "sender"
	s.Clients.Add(sender)
	away, _, _ := newTestClient()
	away.ID = "away"
	s.Clients.Add(away)
	away.Stop(nil) // a session without a connection
	s.Topics.Subscribe(away.ID, packets.Subscription{Filter: "a/b/c", Qos: 1})

	go func() {
		_ = s.processPacket(sender, packetCopy(*packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).Packet))
		_ = w.Close()
	}()
	ack := make([]byte, len(packettest.TPacketData[packets.Puback].Get(packettest.TPuback).RawBytes))
	_, err := io.ReadFull(r, ack)
	require.NoError(t, err)
	require.Equal(t, packettest.TPacketData[packets.Puback].Get(packettest.TPuback).RawBytes, ack)
	require.Equal(t, 1, away.State.Inflight.Len(), "the session holds the message when the PUBACK is read")
}
