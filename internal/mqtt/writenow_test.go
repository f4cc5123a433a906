// SPDX-License-Identifier: MIT

package mqtt

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// tcpTestClient returns a client on the server end of a loopback TCP
// connection, and the other end.
func tcpTestClient(t *testing.T) (*Client, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	conn, err := ln.Accept()
	require.NoError(t, err)
	cl := newClient(conn, &ops{
		info: new(Info),
		log:  logger,
		options: &Options{
			Capabilities: &Capabilities{
				MaximumClientWritesPending: 1 << 20,
				maximumPacketID:            10,
			},
		},
	})
	cl.Properties.ProtocolVersion = 5
	t.Cleanup(func() {
		cl.Stop(errClientStop)
		peer.Close()
	})
	return cl, peer.(*net.TCPConn)
}

// numberedPublish returns a publish whose payload is size bytes of n, and
// its encoding as the client writes it.
func numberedPublish(t *testing.T, n byte, size int) (packets.Packet, []byte) {
	t.Helper()
	pk := packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish},
		TopicName:   "a/b",
		Payload:     bytes.Repeat([]byte{n}, size),
	}
	enc := pk
	enc.ProtocolVersion, enc.Mods.AllowResponseInfo = 5, true
	var buf bytes.Buffer
	require.NoError(t, enc.PublishEncode(&buf))
	return pk, buf.Bytes()
}

func TestClientWriteNowWritesWhenTheQueueIsIdle(t *testing.T) {
	cl, peer := tcpTestClient(t)
	pk, want := numberedPublish(t, 1, 10)
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: 7}
	wantAck := ack
	wantAck.ProtocolVersion = 5
	var buf bytes.Buffer
	require.NoError(t, wantAck.PubackEncode(&buf))
	want = append(buf.Bytes(), want...)

	written, err := cl.WriteNow(false, &ack, &pk)
	require.NoError(t, err)
	require.True(t, written)
	got := make([]byte, len(want))
	_, err = io.ReadFull(peer, got)
	require.NoError(t, err)
	require.Equal(t, want, got, "the acknowledgement, then the publish, in one write")
	require.Equal(t, int64(1), atomic.LoadInt64(&cl.ops.info.MessagesSent))
	require.Equal(t, int64(len(want)), atomic.LoadInt64(&cl.ops.info.BytesSent))

	// Something queued goes first: WriteNow leaves its packets to the
	// caller.
	queued, _ := numberedPublish(t, 2, 10)
	require.True(t, cl.Queue(&queued))
	for _, wait := range []bool{false, true} {
		written, err = cl.WriteNow(wait, &pk)
		require.NoError(t, err)
		require.False(t, written, "wait=%v", wait)
	}
}

func TestClientWriteNowNeedsADescriptorNotToWait(t *testing.T) {
	cl, r, _ := newTestClient() // net.Pipe: no file descriptor
	defer cl.Stop(errClientStop)
	cl.Properties.ProtocolVersion = 5
	pk, want := numberedPublish(t, 1, 10)
	written, err := cl.WriteNow(false, &pk)
	require.NoError(t, err)
	require.False(t, written, "it cannot write without waiting")

	done := make(chan []byte)
	go func() {
		got := make([]byte, len(want))
		_, _ = io.ReadFull(r, got)
		done <- got
	}()
	written, err = cl.WriteNow(true, &pk)
	require.NoError(t, err)
	require.True(t, written, "waiting, it can")
	require.Equal(t, want, <-done)
}

// TestClientWriteNowNeverWaits writes to a peer that does not read until
// its connection is full: WriteNow must return at once every time, queue
// what the connection did not take, and everything must reach the peer
// in order once the write loop runs and the peer reads.
func TestClientWriteNowNeverWaits(t *testing.T) {
	cl, peer := tcpTestClient(t)
	require.NoError(t, peer.SetReadBuffer(64<<10))
	require.NoError(t, tcpConn(cl.Net.Conn).SetWriteBuffer(64<<10))

	var want []byte
	filled := make(chan int, 1)
	go func() {
		queued, i := 0, 0
		for ; queued < 5; i++ {
			pk, enc := numberedPublish(t, byte(i), 32<<10)
			want = append(want, enc...)
			written, err := cl.WriteNow(false, &pk)
			if err != nil {
				panic(err)
			}
			if !written {
				queued++
				if !cl.enqueue(pendingWrite{pk: &pk}) {
					panic("queue full")
				}
			}
		}
		filled <- i
	}()
	var sent int
	select {
	case sent = <-filled:
	case <-time.After(20 * time.Second):
		t.Fatal("WriteNow waited for a peer that does not read")
	}
	require.Greater(t, sent, 5)
	require.Greater(t, atomic.LoadInt32(&cl.State.outboundQty), int32(5), "the rest waits in the queue, bytes included")

	cl.startWriting()
	got := make([]byte, len(want))
	_, err := io.ReadFull(peer, got)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "every packet arrives whole and in order")
	require.Eventually(t, func() bool { return atomic.LoadInt32(&cl.State.outboundQty) == 0 }, 5*time.Second, time.Millisecond)

	// With the write loop idle again, the next write goes out at once.
	pk, enc := numberedPublish(t, 9, 10)
	written, err := cl.WriteNow(false, &pk)
	require.NoError(t, err)
	require.True(t, written)
	got = make([]byte, len(enc))
	_, err = io.ReadFull(peer, got)
	require.NoError(t, err)
	require.Equal(t, enc, got)
}

// TestClientNextPacketIDDoesNotWaitForAWrite blocks a write to a peer
// that does not read: a publisher that needs a packet id for the same
// client must get one meanwhile.
func TestClientNextPacketIDDoesNotWaitForAWrite(t *testing.T) {
	cl, peer := tcpTestClient(t)
	require.NoError(t, peer.SetReadBuffer(64<<10))
	require.NoError(t, tcpConn(cl.Net.Conn).SetWriteBuffer(64<<10))
	pk, _ := numberedPublish(t, 1, 2<<20) // far more than the buffers hold
	go func() { _ = cl.Write(&pk) }()
	// Encoding megabytes under the race detector on a loaded machine
	// takes seconds: the bound is for a write that never starts.
	require.Eventually(t, func() bool {
		if !cl.Net.writeMu.TryLock() {
			return true
		}
		cl.Net.writeMu.Unlock()
		return false
	}, time.Minute, time.Millisecond, "the write is under way")

	got := make(chan uint32)
	go func() {
		id, _ := cl.NextPacketID()
		got <- id
	}()
	select {
	case id := <-got:
		require.NotZero(t, id)
	case <-time.After(time.Minute):
		t.Fatal("NextPacketID waited for the write")
	}
}

func TestClientWriteNowAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are counted without the race detector (.ci/run)")
	}
	cl, peer := tcpTestClient(t)
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: 7}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, peer)
	}()
	allocs := testing.AllocsPerRun(1000, func() {
		if written, err := cl.WriteNow(false, &ack); !written || err != nil {
			t.Fatalf("WriteNow: written %v, error %v", written, err)
		}
	})
	require.Zero(t, allocs, "allocations per write of an acknowledgement")
	peer.CloseRead()
	cl.Stop(errClientStop)
	<-drained
}

// tcpConn is the TCP connection under c, which the client may have
// wrapped to read and write it raw.
func tcpConn(c net.Conn) *net.TCPConn {
	if w, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = w.NetConn()
	}
	return c.(*net.TCPConn)
}

// A client's TCP connection, read and written raw, still shuts its
// sending side on its own (stopAfterDisconnect), so that a client the
// server ends reads the DISCONNECT and the end of the stream at once.
func TestClientConnectionKeepsCloseWrite(t *testing.T) {
	cl, _ := tcpTestClient(t)
	_, ok := cl.Net.Conn.(interface{ CloseWrite() error })
	require.True(t, ok, "%T has no CloseWrite", cl.Net.Conn)
}
