// SPDX-License-Identifier: MIT

package mqtt

import (
	"net"
	"testing"
	"unsafe"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/stretchr/testify/require"
)

// TestPrefetchAheadToleratesEveryClient runs the prefetch of a round over
// clients in every state a ready list can hold them: removed (nil), over
// a pipe, over TCP with a message in flight and an attachment, and with
// no inflight store. Prefetching only reads what it follows.
func TestPrefetchAheadToleratesEveryClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer dialed.Close()

	piped, _, _ := newTestClient()
	tcp, _, _ := newTestClient()
	tcp.Net.Conn = dialed
	tcp.State.Inflight.Set(packets.Packet{PacketID: 1, Payload: []byte("x")})
	tcp.Attached.Store(&struct{ n int }{1})
	bare, _, _ := newTestClient()
	bare.State.Inflight = nil
	bare.Net.Conn = nil

	ready := []readyConn{{fd: 3}, {fd: 4, cl: piped}, {fd: 5, cl: tcp}, {fd: 6, cl: bare}}
	for _, n := range []int{1, 2, len(ready)} {
		for i := range ready[:n] {
			prefetchAhead(ready[:n], i)
		}
	}
	for i := 0; i < 3; i++ {
		ready = append(ready, ready...)
	}
	for i := range ready {
		prefetchAhead(ready, i)
	}
}

func TestDataOfIsThePointer(t *testing.T) {
	x := &struct{ n int }{7}
	require.Equal(t, unsafe.Pointer(x), dataOf(x))
}
