// SPDX-License-Identifier: MIT

package mqtt

import (
	"net"
	"reflect"
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
	owned, _, _ := newTestClient()
	owned.State.Inflight.SetCopy(&packets.Packet{PacketID: 2, Owner: new(countingOwner)})
	bare, _, _ := newTestClient()
	bare.State.Inflight = nil
	bare.Net.Conn = nil

	ready := []readyConn{{fd: 3}, {fd: 4, cl: piped}, {fd: 5, cl: tcp}, {fd: 6, cl: bare}, {fd: 7, cl: owned}}
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

// TestInflightMapGroupHoldsTheEntries checks what prefetchLeaves assumes
// of the runtime's maps: the header of a map of up to eight entries
// points to one group of smallGroupBytes that holds them.
func TestInflightMapGroupHoldsTheEntries(t *testing.T) {
	inf := NewInflights()
	var want []*packets.Packet
	for id := uint16(1); id <= 8; id++ {
		inf.Set(packets.Packet{PacketID: id})
		want = append(want, inf.internal[id])
	}
	m := (*mapHeader)(inf.internalMap())
	require.Zero(t, m.dirLen, "a map of eight entries has no directory")
	require.Equal(t, uint64(8), m.used)
	group := unsafe.Slice((*unsafe.Pointer)(m.dirPtr), smallGroupBytes/8)
	for _, pk := range want {
		require.Contains(t, group, unsafe.Pointer(pk), "the group holds every entry")
	}
}

// TestPollDescOffsetFindsTheRuntimesDescriptor checks the offset that
// prefetchLeaves reads the runtime's poll descriptor at: the word there
// is the descriptor that reflection finds in the connection.
func TestPollDescOffsetFindsTheRuntimesDescriptor(t *testing.T) {
	require.Positive(t, pollDescOffset, "this Go's net.TCPConn has a runtime poll descriptor")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	tc := c.(*net.TCPConn)

	want := reflect.ValueOf(tc).Elem().FieldByName("conn").FieldByName("fd").Elem().
		FieldByName("pfd").FieldByName("pd").FieldByName("runtimeCtx").Uint()
	require.NotZero(t, want)
	fd := *(*unsafe.Pointer)(unsafe.Pointer(tc))
	require.Equal(t, uintptr(want), *(*uintptr)(unsafe.Add(fd, pollDescOffset)))
}

func TestPrefetchNeverFaults(t *testing.T) {
	buf := make([]byte, 1000)
	p := uintptr(unsafe.Pointer(&buf[0]))
	for _, c := range []struct{ addr, n uintptr }{
		{p, 1}, {p + 3, 1000 - 3}, {p + 63, 2}, {0, 1}, {8, 4096},
		{^uintptr(0) - 10, 100}, // wraps around
	} {
		prefetch(c.addr, c.n)
	}
}
