// SPDX-License-Identifier: MIT

package mqtt

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/mqtt/packets/packettest"
)

// A client that subscribes with QoS 1 and never acknowledges, until all
// its packet ids are held by messages it was sent, makes every message
// for it a drop: each is counted, but the log gets at most a line a
// second, saying how many were dropped since the line before, not a line
// per message.
func TestMessagesDroppedForAClientThatDoesNotAcknowledgeAreLoggedOnceASecond(t *testing.T) {
	logs := new(syncBuffer)
	s := newServer()
	s.Log = slog.New(slog.NewTextHandler(logs, nil))
	cl, _, _ := newTestClient()
	for i := uint32(0); i <= cl.ops.options.Capabilities.maximumPacketID; i++ {
		cl.State.Inflight.Set(&packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, PacketID: uint16(i)})
	}
	publish := func() {
		_, err := s.publishToClient(cl, packets.Subscription{Filter: "a/b/c", Qos: 1}, copyOf(*packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).Packet), nil)
		require.ErrorIs(t, err, packets.ErrQuotaExceeded)
	}
	const flood = 1000
	for range flood {
		publish()
	}
	require.Equal(t, int64(flood), atomic.LoadInt64(&s.Info.InflightDropped))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 1, "log:\n%s", logs.String())
	require.Contains(t, lines[0], "client="+cl.ID)
	require.True(t, strings.HasSuffix(lines[0], " dropped=1"), lines[0])

	// The next line allowed counts every drop since the first one.
	s.dropLog = newDropLog()
	publish()
	lines = strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 2)
	require.True(t, strings.HasSuffix(lines[1], " dropped=1000"), lines[1])
}
