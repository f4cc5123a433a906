// SPDX-License-Identifier: MIT

package mqtt

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// A session installed from another node is taken over by the connection
// that resumes it: Session Present, its subscriptions, and its queued
// messages sent as first deliveries.
func TestInstalledSessionIsResumed(t *testing.T) {
	s := newServer()
	defer s.Close()
	id := packets.TPacketData[packets.Connect].Get(packets.TConnectMqtt311).Packet.Connect.ClientIdentifier
	queued := *packets.TPacketData[packets.Publish].Get(packets.TPublishQos1).Packet
	queued.Queued = true
	require.True(t, s.InstallSession(id, 4, 300, []packets.Subscription{{Filter: "a/b/c", Qos: 1}}, []packets.Packet{queued}))
	require.False(t, s.InstallSession(id, 4, 300, nil, nil), "a second session of the id")

	r, w := net.Pipe()
	o := make(chan error)
	go func() { o <- s.EstablishConnection("tcp", r) }()
	want := append(
		packets.TPacketData[packets.Connack].Get(packets.TConnackAcceptedSessionExists).RawBytes,
		packets.TPacketData[packets.Publish].Get(packets.TPublishQos1).RawBytes...,
	)
	recv := make(chan []byte, 1)
	go func() {
		_, _ = w.Write(packets.TPacketData[packets.Connect].Get(packets.TConnectMqtt311).RawBytes)
		buf := make([]byte, len(want))
		n, _ := io.ReadFull(w, buf)
		_, _ = w.Write(packets.TPacketData[packets.Disconnect].Get(packets.TDisconnect).RawBytes)
		_, _ = io.ReadAll(w)
		recv <- buf[:n]
	}()
	require.NoError(t, <-o)
	require.Equal(t, want, <-recv)
	cl, ok := s.Clients.Get(id)
	require.True(t, ok)
	_, subscribed := cl.State.Subscriptions.Get("a/b/c")
	require.True(t, subscribed)
}
