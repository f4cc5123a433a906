// SPDX-License-Identifier: MIT

//go:build linux

package mqtt

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/listeners"
	"github.com/dssio/dss/internal/mqtt/packets"
)

// panicHook is the echo hook, but a request whose payload is "panic"
// panics while it is handled.
type panicHook struct{ echoHook }

func (h *panicHook) ConsumePublish(cl *Client, pk *packets.Packet) error {
	if string(pk.Payload) == "panic" {
		var none []int
		_ = none[len(pk.Payload)] // index out of range
	}
	return h.echoHook.ConsumePublish(cl, pk)
}

// faultServer starts a server with loops read loops (0: a goroutine per
// connection) and hook on a loopback port; its log goes to the returned
// buffer.
func faultServer(t *testing.T, hook any, loops int, opts Options) (*Server, string, *syncBuffer) {
	t.Helper()
	logs := new(syncBuffer)
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.ConsumedTopic = loopTopic
	opts.ReadLoops = loops
	s := New(&opts)
	s.use(hook)
	l := listeners.NewTCP(listeners.Config{ID: "t", Address: "127.0.0.1:0"})
	require.NoError(t, s.AddListener(l))
	require.NoError(t, s.Serve())
	require.Len(t, s.readLoops, loops)
	t.Cleanup(func() { _ = s.Close() })
	return s, l.Address(), logs
}

// expectDisconnect reads a DISCONNECT with reason code want, then the
// end of the connection.
func (p *loopPeer) expectDisconnect(want byte) {
	p.t.Helper()
	typ, body := p.read()
	require.Equal(p.t, packets.Disconnect, typ)
	require.NotEmpty(p.t, body)
	require.Equal(p.t, want, body[0], "reason code")
	_, _, err := p.tryRead(5 * time.Second)
	require.ErrorIs(p.t, err, io.EOF)
}

// stillServes checks that a new connection and an existing one are
// answered.
func stillServes(t *testing.T, addr string, other *loopPeer) {
	t.Helper()
	other.write(other.request([]byte("still here")))
	require.Equal(t, []byte("still here"), other.answer(other.next))
	fresh := dialLoop(t, addr, "fresh", 30)
	fresh.write(fresh.request([]byte("new")))
	require.Equal(t, []byte("new"), fresh.answer(fresh.next))
}

func forEachReader(t *testing.T, test func(t *testing.T, loops int)) {
	t.Run("goroutine", func(t *testing.T) { test(t, 0) })
	t.Run("read loop", func(t *testing.T) { test(t, 1) })
}

func TestTruncatedSubscribeIsAnsweredWithDisconnectMalformed(t *testing.T) {
	forEachReader(t, func(t *testing.T, loops int) {
		s, addr, logs := faultServer(t, new(echoHook), loops, Options{})
		other := dialLoop(t, addr, "other", 30)
		p := dialLoop(t, addr, "bad", 30)
		// Packet id 1, no properties, filter "a", and no options byte.
		p.write([]byte{packets.Subscribe<<4 | 2, 6, 0, 1, 0, 0, 1, 'a'})
		p.expectDisconnect(packets.ErrMalformedSubscriptionOptions.Code)
		stillServes(t, addr, other)
		require.Equal(t, int64(1), s.Faults.RefusedPackets.Load())
		require.Contains(t, logs.String(), "packet refused")
		require.Contains(t, logs.String(), "type=Subscribe bytes=6")
	})
}

func TestPropertiesLongerThanTheirPacketAreAnsweredWithDisconnectMalformed(t *testing.T) {
	forEachReader(t, func(t *testing.T, loops int) {
		s, addr, _ := faultServer(t, new(echoHook), loops, Options{})
		other := dialLoop(t, addr, "other", 30)
		p := dialLoop(t, addr, "bad", 30)
		// A request whose property length byte was flipped from 0 to 0x40.
		req := p.request([]byte("x"))
		at := len(req) - 1 - 1 // the property length precedes the payload
		require.Equal(t, byte(0), req[at])
		req[at] = 0x40
		p.write(req)
		p.expectDisconnect(packets.ErrMalformedProperties.Code)
		stillServes(t, addr, other)
		require.Equal(t, int64(1), s.Faults.RefusedPackets.Load())
	})
}

func TestAPanicWhileHandlingAPacketEndsOnlyItsConnection(t *testing.T) {
	forEachReader(t, func(t *testing.T, loops int) {
		h := new(panicHook)
		s, addr, logs := faultServer(t, h, loops, Options{})
		other := dialLoop(t, addr, "other", 30)
		p := dialLoop(t, addr, "doomed", 30)
		p.write(p.request([]byte("fine")))
		require.Equal(t, []byte("fine"), p.answer(p.next))
		p.write(p.request([]byte("panic")))
		_, _, err := p.tryRead(5 * time.Second)
		require.ErrorIs(t, err, io.EOF)
		stillServes(t, addr, other)
		require.Equal(t, int64(1), s.Faults.Panics.Load())
		require.Eventually(t, func() bool {
			err, ok := h.disconnectError("doomed")
			return ok && err != nil && strings.Contains(err.Error(), ErrConnectionPanicked.Error())
		}, 5*time.Second, 10*time.Millisecond)
		require.Contains(t, logs.String(), "panic while serving a connection")
		require.Contains(t, logs.String(), "index out of range")
		require.Contains(t, logs.String(), "goroutine") // the stack
	})
}

func TestAConnectionThatNeverCompletesItsConnectIsClosed(t *testing.T) {
	_, addr, _ := faultServer(t, new(echoHook), 0, Options{ConnectTimeout: 300 * time.Millisecond})
	conn := dialRaw(t, addr)
	// One byte of a CONNECT every 50 ms: each arrives in time, the whole
	// never does.
	var connect bytes.Buffer
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: 5,
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 30, ClientIdentifier: "slow"}}
	require.NoError(t, pk.ConnectEncode(&connect))
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		b := make([]byte, 1)
		for {
			if _, err := conn.Read(b); err != nil {
				return
			}
		}
	}()
	for _, b := range connect.Bytes()[:connect.Len()-1] {
		select {
		case <-closed:
			return // closed before the CONNECT was complete
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := conn.Write([]byte{b}); err != nil {
			return
		}
	}
	t.Fatalf("the connection was still open after %d bytes at one every 50 ms", connect.Len()-1)
}

func TestPacketLogLinesHoldNeitherPayloadNorPassword(t *testing.T) {
	_, addr, logs := faultServer(t, new(echoHook), 0, Options{})
	p := dialLoop(t, addr, "logged", 30)
	// A second CONNECT, a protocol error, with a password.
	second := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: 5,
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 30, ClientIdentifier: "logged",
			UsernameFlag: true, Username: []byte("user"), PasswordFlag: true, Password: []byte("hunter2-secret")}}
	var buf bytes.Buffer
	require.NoError(t, second.ConnectEncode(&buf))
	p.write(buf.Bytes())
	p.expectDisconnect(packets.ErrProtocolViolationSecondConnect.Code)
	// A publish with a payload and a wildcard in its topic, a protocol error.
	q := dialLoop(t, addr, "logged2", 30)
	bad := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, ProtocolVersion: 5,
		TopicName: "a/+", PacketID: 1, Payload: bytes.Repeat([]byte("PAYLOAD"), 1000)}
	buf.Reset()
	require.NoError(t, bad.PublishEncode(&buf))
	q.write(buf.Bytes())
	q.expectDisconnect(packets.ErrProtocolViolationSurplusWildcard.Code)
	require.Eventually(t, func() bool { return strings.Count(logs.String(), "error processing packet") == 2 },
		5*time.Second, 10*time.Millisecond)
	out := logs.String()
	require.NotContains(t, out, "hunter2")
	require.NotContains(t, out, "PAYLOAD")
	for _, line := range strings.Split(out, "\n") {
		require.Less(t, len(line), 1000, "log line %q", line)
	}
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestAMalformedConnectIsAnsweredWithConnackMalformed(t *testing.T) {
	s, addr, _ := faultServer(t, new(echoHook), 0, Options{})
	var connect bytes.Buffer
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: 5,
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 30, ClientIdentifier: "c"}}
	require.NoError(t, pk.ConnectEncode(&connect))
	b := connect.Bytes()
	// Fixed header (2), protocol name (6), version, flags, keepalive (2):
	// then the property length, flipped from 0 to 0x40.
	require.Equal(t, byte(0), b[12])
	b[12] = 0x40
	conn := dialRaw(t, addr)
	_, err := conn.Write(b)
	require.NoError(t, err)
	p := &loopPeer{t: t, conn: conn, r: bufio.NewReader(conn)}
	typ, body := p.read()
	require.Equal(t, packets.Connack, typ)
	require.Equal(t, packets.ErrMalformedProperties.Code, body[1])
	_, _, err = p.tryRead(5 * time.Second)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, int64(1), s.Faults.RefusedPackets.Load())
}
