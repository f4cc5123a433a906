// SPDX-License-Identifier: MIT

//go:build linux

package mqtt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/dssio/dss/internal/mqtt/packets"
)

func TestReadLoopHandlesRequestsAndHandsBackTheRest(t *testing.T) {
	h := new(echoHook)
	_, addr := loopServer(t, h, 0)
	p := dialLoop(t, addr, "a", 30)

	for i := 0; i < 20; i++ {
		want := []byte(fmt.Sprintf("request %d", i))
		p.write(p.request(want))
		require.Equal(t, want, p.answer(p.next))
	}
	require.Equal(t, int64(20), h.byLoop.Load())

	// A SUBSCRIBE is handled by the connection's goroutine, and the
	// requests after it by the loop again.
	p.subscribe(500, "x/y", 0)
	p.write(p.request([]byte("after")))
	require.Equal(t, []byte("after"), p.answer(p.next))
	require.Equal(t, int64(21), h.byLoop.Load())
	require.Equal(t, int64(0), h.byReader.Load())
}

func TestReadLoopReadsPacketsInPieces(t *testing.T) {
	h := new(echoHook)
	_, addr := loopServer(t, h, 0)
	p := dialLoop(t, addr, "a", 30)

	// Three requests in one write, then one a byte at a time, then one
	// split inside its fixed header and a SUBSCRIBE in the same write.
	var three []byte
	for i := 0; i < 3; i++ {
		three = append(three, p.request([]byte{byte(i)})...)
	}
	p.write(three)
	for i := 0; i < 3; i++ {
		require.Equal(t, []byte{byte(i)}, p.answer(uint16(i+1)))
	}
	for _, b := range p.request([]byte("slow")) {
		p.write([]byte{b})
		time.Sleep(time.Millisecond) // each byte in a read of its own
	}
	require.Equal(t, []byte("slow"), p.answer(p.next))

	big := p.request(bytes.Repeat([]byte{'x'}, 300)) // a fixed header of 3 bytes
	p.write(big[:2])
	time.Sleep(10 * time.Millisecond) // the two bytes in a read of their own
	sub := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
		ProtocolVersion: 5,
		PacketID:        500,
		Filters:         packets.Subscriptions{{Filter: "x/y"}},
	}
	var buf bytes.Buffer
	require.NoError(t, sub.SubscribeEncode(&buf))
	p.write(append(big[2:], buf.Bytes()...))
	require.Equal(t, bytes.Repeat([]byte{'x'}, 300), p.answer(p.next))
	typ, _ := p.read()
	require.Equal(t, packets.Suback, typ)
	require.Equal(t, int64(5), h.byLoop.Load()+h.byReader.Load())
	require.Positive(t, h.byLoop.Load())
}

func TestReadLoopHandsBackPacketsLargerThanItsBuffer(t *testing.T) {
	h := new(echoHook)
	_, addr := loopServer(t, h, 256)
	p := dialLoop(t, addr, "a", 30)

	large := bytes.Repeat([]byte{'L'}, 1000)
	p.write(p.request(large))
	require.Equal(t, large, p.answer(p.next))
	require.Equal(t, int64(1), h.byReader.Load())
	p.write(p.request([]byte("small")))
	require.Equal(t, []byte("small"), p.answer(p.next))
	require.Equal(t, int64(1), h.byLoop.Load())
}

func TestReadLoopEndsAConnectionWhoseKeepaliveExpires(t *testing.T) {
	h := new(echoHook)
	_, addr := loopServer(t, h, 0)
	// Measured from before the connection: the deadline may be the one
	// set at connect, which a request close to it does not move (FORK.md
	// item 8), and a loaded machine may answer that request late.
	start := time.Now()
	p := dialLoop(t, addr, "quiet", 1)
	p.write(p.request([]byte("one")))
	require.Equal(t, []byte("one"), p.answer(p.next))
	require.Equal(t, int64(1), h.byLoop.Load())

	// Silent for longer than 1.5 keepalives: the server ends the
	// connection, as a read deadline would, and not before (it measures
	// from its last read, which came after start).
	_, _, err := p.tryRead(10 * time.Second)
	require.ErrorIs(t, err, io.EOF)
	require.GreaterOrEqual(t, time.Since(start), 1500*time.Millisecond)
	require.Eventually(t, func() bool {
		err, ok := h.disconnectError("quiet")
		return ok && errors.Is(err, os.ErrDeadlineExceeded)
	}, 5*time.Second, 10*time.Millisecond)
}

func TestReadLoopKeepsABusyConnectionPastItsKeepalive(t *testing.T) {
	h := new(echoHook)
	_, addr := loopServer(t, h, 0)
	p := dialLoop(t, addr, "busy", 1)
	deadline := time.Now().Add(3 * time.Second) // two keepalive expiries
	for time.Now().Before(deadline) {
		p.write(p.request([]byte("ping")))
		require.Equal(t, []byte("ping"), p.answer(p.next))
		time.Sleep(100 * time.Millisecond) // a request every 100 ms, for 3 s
	}
	_, ok := h.disconnectError("busy")
	require.False(t, ok)
	require.Zero(t, h.byReader.Load())
}

func TestReadLoopReleasesAConnectionTheServerEnds(t *testing.T) {
	h := new(echoHook)
	s, addr := loopServer(t, h, 0)
	p := dialLoop(t, addr, "a", 30)
	p.write(p.request([]byte("x")))
	require.Equal(t, []byte("x"), p.answer(p.next))

	cl, ok := s.Clients.Get("a")
	require.True(t, ok)
	require.ErrorIs(t, s.DisconnectClient(cl, packets.ErrAdministrativeAction), packets.ErrAdministrativeAction)
	// The DISCONNECT, unless the loop was in a turn on the connection
	// (its write is then queued, and the write loop ends with the
	// client), and the end of the connection.
	typ, _, err := p.tryRead(5 * time.Second)
	if err == nil {
		require.Equal(t, packets.Disconnect, typ)
		_, _, err = p.tryRead(5 * time.Second)
	}
	require.ErrorIs(t, err, io.EOF)
	require.Eventually(t, func() bool {
		_, ok := h.disconnectError("a")
		return ok
	}, 5*time.Second, 10*time.Millisecond)
	require.Zero(t, s.readLoops[0].Len())
}

func TestReadLoopDoesNotWaitForAClientThatDoesNotRead(t *testing.T) {
	h := &echoHook{size: 256 << 10}
	_, addr := loopServer(t, h, 0)

	// Its answers fill the connection, which it does not read: the
	// loop must not wait for room, or nobody else is answered.
	stuck := dialLoop(t, addr, "stuck", 30)
	for i := 0; i < 64; i++ {
		stuck.write(stuck.request([]byte("x")))
	}
	other := dialLoop(t, addr, "other", 30)
	for i := 0; i < 3; i++ {
		other.write(other.request([]byte("y")))
		require.Len(t, other.answer(other.next), 256<<10)
	}
}

func TestPacketSize(t *testing.T) {
	for _, c := range []struct {
		b            []byte
		size, header int
	}{
		{nil, 0, 0},
		{[]byte{0x30}, 0, 0},
		{[]byte{0x40, 2}, 4, 2},
		{[]byte{0x30, 0x80}, 0, 0},
		{[]byte{0x30, 0x80, 0x01}, 131, 3},
		{[]byte{0x30, 0xff, 0xff, 0xff, 0x7f}, 1 + 4 + 268435455, 5},
		{[]byte{0x30, 0xff, 0xff, 0xff}, 0, 0},
		{[]byte{0x30, 0xff, 0xff, 0xff, 0xff}, -1, 0},
		{[]byte{0x30, 0xff, 0xff, 0xff, 0xff, 0x01}, -1, 0},
	} {
		size, header := packetSize(c.b)
		require.Equal(t, c.size, size, "%x", c.b)
		require.Equal(t, c.header, header, "%x", c.b)
	}
}

func TestClientWriteLoopKeepsOrderWhileALoopServesTheClient(t *testing.T) {
	cl, peer := tcpTestClient(t)
	cl.startWriting()
	// While a read loop handles one of the client's packets, the write
	// loop writes what it took from the queue itself, in order, rather
	// than queueing it again behind what came after.
	cl.Net.loop.serving.Store(true)
	var want []byte
	for i := 0; i < 100; i++ {
		pk, enc := numberedPublish(t, byte(i), 100)
		want = append(want, enc...)
		require.True(t, cl.Queue(&pk))
	}
	got := make([]byte, len(want))
	require.NoError(t, peer.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := io.ReadFull(peer, got)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestReadLoopTurnReadsWithoutAllocating(t *testing.T) {
	cl, peer := tcpTestClient(t)
	bufs := loopBuffers{reader: bufio.NewReaderSize(nil, 4096)}
	ping := []byte{packets.Pingreq << 4, 0}
	src := &cl.Net.src
	allocs := testing.AllocsPerRun(500, func() {
		if _, err := peer.Write(ping); err != nil {
			t.Fatal(err)
		}
		bufs.lend(cl)
		src.turn = true
		for cl.Net.bconn.Buffered() < len(ping) {
			src.read = false // a read per round, until the bytes came
			if _, err := cl.Net.bconn.Peek(len(ping)); err != nil && err != errWouldBlock {
				t.Fatal(err)
			}
		}
		b, _ := cl.Net.bconn.Peek(len(ping))
		if !bytes.Equal(b, ping) {
			t.Fatalf("read % x, want % x", b, ping)
		}
		_, _ = cl.Net.bconn.Discard(len(ping))
		src.turn = false
		bufs.giveBack(cl)
	})
	require.Zero(t, allocs, "allocations per turn's read")
}

func TestReadLoopReadsWhatAFullBufferLeft(t *testing.T) {
	h := new(echoHook)
	_, addr := loopServer(t, h, 256)
	p := dialLoop(t, addr, "a", 30)

	// Forty requests in one write: a turn's read takes what fits in the
	// loop's 256 bytes, and no more data comes to report the rest.
	var all []byte
	for i := 0; i < 40; i++ {
		all = append(all, p.request([]byte(fmt.Sprintf("request %02d", i)))...)
	}
	require.Greater(t, len(all), 3*256)
	p.write(all)
	for i := 0; i < 40; i++ {
		require.Equal(t, []byte(fmt.Sprintf("request %02d", i)), p.answer(uint16(i+1)))
	}
	require.Equal(t, int64(40), h.byLoop.Load())
}

func TestReadLoopSeesThePeersEndBehindItsLastRequest(t *testing.T) {
	h := new(echoHook)
	s, addr := loopServer(t, h, 0)
	busy := dialLoop(t, addr, "busy", 30)
	last := dialLoop(t, addr, "last", 30)
	busy.write(busy.request([]byte("x")))
	require.Equal(t, []byte("x"), busy.answer(busy.next))
	cl, ok := s.Clients.Get("busy")
	require.True(t, ok)

	lastCl, ok := s.Clients.Get("last")
	require.True(t, ok)

	// The loop waits for the turn on "busy" while a request and the end
	// of "last" come, so that one event reports both: epoll reports
	// "busy", ready first, before "last" in any round, and the loop
	// cannot take its turn on "busy" until the lock is released.
	cl.Net.loop.member.WithoutTurn(func(bool) {
		busy.write(busy.request([]byte("y")))
		require.Eventually(t, func() bool { return pollServerSide(t, cl, unix.POLLIN) }, 5*time.Second, time.Millisecond)
		last.write(last.request([]byte("bye")))
		require.NoError(t, last.conn.(*net.TCPConn).CloseWrite())
		require.Eventually(t, func() bool { return pollServerSide(t, lastCl, unix.POLLIN|unix.POLLRDHUP) }, 5*time.Second, time.Millisecond)
	})

	require.Equal(t, []byte("y"), busy.answer(busy.next))
	require.Equal(t, []byte("bye"), last.answer(last.next))
	require.Eventually(t, func() bool {
		_, ok := h.disconnectError("last")
		return ok
	}, 5*time.Second, 10*time.Millisecond, "the end of the connection after its request")
	_, ok = h.disconnectError("busy")
	require.False(t, ok)
}

// pollServerSide reports whether the server's end of cl's connection has
// every one of the poll events want (data to read, the peer's end), as the
// read loop's epoll would see them, without reading anything.
func pollServerSide(t *testing.T, cl *Client, want int16) bool {
	var got int16
	err := cl.Net.raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: want}}
		if n, err := unix.Poll(fds, 0); err == nil && n == 1 {
			got = fds[0].Revents
		}
	})
	require.NoError(t, err)
	return got&want == want
}

// TestReadLoopRoutesPublishesItself publishes QoS 0 and QoS 1 messages
// one at a time from a connection parked in a read loop: the loop routes
// each in its turn, writing the PUBACK and the delivery without waiting,
// and never hands the connection back to a goroutine for them (which
// cost two epoll_ctl calls and a hand-off per message); the subscriber
// gets every message, in order.
// handedBack counts the turns of s's read loops that handed their
// connection back to its goroutine.
func handedBack(s *Server) (n int64) {
	for _, l := range s.readLoops {
		n += l.handedBack.Load()
	}
	return n
}

func TestReadLoopRoutesPublishesItself(t *testing.T) {
	if !ReadLoopsAvailable {
		t.Skip("no read loops here")
	}
	s, addr := loopServer(t, new(echoHook), 0)
	sub := dialLoop(t, addr, "sub", 30)
	sub.subscribe(1, "plain/#", 1)
	var buf bytes.Buffer

	pub := dialLoop(t, addr, "pub", 30)
	cl, ok := s.Clients.Get("pub")
	require.True(t, ok)
	// The subscriber's writes, which a worker made, are the round's.
	written := func() (n int64) {
		for _, l := range s.readLoops {
			n += l.bufs.round.written.Load()
		}
		return n
	}
	before, wrote := handedBack(s), written()
	for i := 0; i < 40; i++ {
		// The connection is parked again after each message: the next
		// is read by the loop.
		require.Eventually(t, func() bool { return cl.Net.loop.parked.Load() }, 5*time.Second, time.Millisecond)
		qos := byte(i % 2)
		payload := fmt.Sprintf("message %d", i)
		pk := packets.Packet{
			FixedHeader:     packets.FixedHeader{Type: packets.Publish, Qos: qos},
			ProtocolVersion: 5,
			TopicName:       "plain/x",
			PacketID:        uint16(i + 1),
			Payload:         []byte(payload),
		}
		buf.Reset()
		require.NoError(t, pk.PublishEncode(&buf))
		pub.write(buf.Bytes())
		if qos == 1 {
			typ, body := pub.read()
			require.Equal(t, packets.Puback, typ)
			require.Equal(t, uint16(i+1), binary.BigEndian.Uint16(body))
		}
		first, body, err := readFrame(sub.conn, sub.r, 5*time.Second)
		require.NoError(t, err)
		require.Equal(t, packets.Publish, first>>4)
		got := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, ProtocolVersion: 5}
		require.NoError(t, got.FixedHeader.Decode(first))
		require.NoError(t, got.PublishDecode(body))
		require.Equal(t, payload, string(got.Payload))
		require.Equal(t, qos, got.FixedHeader.Qos)
		if got.FixedHeader.Qos == 1 {
			ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, ProtocolVersion: 5, PacketID: got.PacketID}
			buf.Reset()
			require.NoError(t, ack.PubackEncode(&buf))
			sub.write(buf.Bytes())
		}
	}
	require.Equal(t, before, handedBack(s), "publishes handed back to a goroutine")
	// A round counts a queue once its write returned: the subscriber
	// may have read the last message by then. A delivery whose
	// subscriber's writer is busy when the round ends goes to that
	// writer (on a loaded machine, 1 in 40 was seen): most, not all,
	// are the round's; none were before.
	require.Eventually(t, func() bool { return written()-wrote >= 30 }, 5*time.Second, time.Millisecond,
		"the loop's rounds wrote %d of 40 deliveries", written()-wrote)
}

// TestAReadLoopRoundLeavesWhatItCannotWriteToAWorker: the queues a read
// loop's round fills are written by the round as far as the connection
// takes the bytes at once; a burst of more deliveries than one write
// carries, and what a subscriber that does not read cannot take, go to
// a worker, ahead of what is queued after them. The subscriber gets every
// message, in order, once it reads.
func TestAReadLoopRoundLeavesWhatItCannotWriteToAWorker(t *testing.T) {
	if !ReadLoopsAvailable {
		t.Skip("no read loops here")
	}
	for _, c := range []struct {
		name     string
		messages int
		size     int
		perWrite int // publishes written to the socket at once
	}{
		{"a burst in one round", 3 * writeBatch, 8, 3 * writeBatch},
		{"more than the subscriber's socket takes", 400, 16 << 10, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, addr := loopServer(t, new(echoHook), 0)
			sub := dialLoop(t, addr, "sub", 30)
			sub.subscribe(1, "burst/#", 0)
			var buf bytes.Buffer

			pub := dialLoop(t, addr, "pub", 30)
			pad := bytes.Repeat([]byte{'.'}, c.size)
			for i := 0; i < c.messages; i += c.perWrite {
				buf.Reset()
				for j := i; j < min(i+c.perWrite, c.messages); j++ {
					pk := packets.Packet{
						FixedHeader:     packets.FixedHeader{Type: packets.Publish},
						ProtocolVersion: 5,
						TopicName:       "burst/x",
						Payload:         append([]byte(fmt.Sprintf("%06d", j)), pad...),
					}
					require.NoError(t, pk.PublishEncode(&buf))
				}
				pub.write(buf.Bytes())
			}
			for i := 0; i < c.messages; i++ {
				first, body, err := readFrame(sub.conn, sub.r, 10*time.Second)
				require.NoError(t, err, "message %d", i)
				require.Equal(t, packets.Publish, first>>4)
				got := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, ProtocolVersion: 5}
				require.NoError(t, got.FixedHeader.Decode(first))
				require.NoError(t, got.PublishDecode(body))
				require.Equal(t, fmt.Sprintf("%06d", i), string(got.Payload[:6]))
			}
		})
	}
}
