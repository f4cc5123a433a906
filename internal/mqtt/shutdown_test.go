// SPDX-License-Identifier: MIT

//go:build linux

package mqtt

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// connectGateHook is the echo hook whose Connect waits for release,
// holding a connection between its CONNECT and its registration.
type connectGateHook struct {
	echoHook
	entered chan struct{}
	release chan struct{}
}

func (h *connectGateHook) Connect(*Client, *packets.Packet) error {
	h.entered <- struct{}{}
	<-h.release
	return nil
}

// startClose runs s.Close and returns a channel closed when it returns.
func startClose(s *Server) <-chan struct{} {
	closed := make(chan struct{})
	go func() {
		_ = s.Close()
		close(closed)
	}()
	return closed
}

// awaitClosed fails the test unless Close returns within a generous
// bound: a Close that waits for a client is a hang, not a slow test.
func awaitClosed(t *testing.T, closed <-chan struct{}) {
	t.Helper()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close still waits for a client")
	}
}

// awaitClosing waits until s.Close has begun.
func awaitClosing(t *testing.T, s *Server) {
	t.Helper()
	require.Eventually(t, func() bool {
		s.attachMu.Lock()
		defer s.attachMu.Unlock()
		return s.closing
	}, 10*time.Second, time.Millisecond)
}

func connectPacket(t *testing.T, id string, keepalive uint16) []byte {
	t.Helper()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: 5,
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: keepalive, ClientIdentifier: id}}
	var buf bytes.Buffer
	require.NoError(t, pk.ConnectEncode(&buf))
	return buf.Bytes()
}

// A connection whose CONNECT was read before the server began to close,
// but which registers after Close disconnected the clients, was served
// on: Close waited for it as long as the client kept the connection (for
// ever without a keepalive). It is now refused with CONNACK 0x88.
func TestCloseRefusesAConnectionRegisteringMeanwhile(t *testing.T) {
	h := &connectGateHook{entered: make(chan struct{}, 1), release: make(chan struct{})}
	s, addr, _ := faultServer(t, h, 0, Options{})
	conn := dialRaw(t, addr)
	_, err := conn.Write(connectPacket(t, "late", 0))
	require.NoError(t, err)
	<-h.entered

	closed := startClose(s)
	awaitClosing(t, s)
	close(h.release)
	awaitClosed(t, closed)

	p := &loopPeer{t: t, conn: conn, r: bufio.NewReader(conn)}
	typ, body := p.read()
	require.Equal(t, packets.Connack, typ)
	require.Equal(t, packets.ErrServerUnavailable.Code, body[1], "reason code")
	_, _, err = p.tryRead(5 * time.Second)
	require.ErrorIs(t, err, io.EOF)
}

// A connection that has not sent its CONNECT when the server begins to
// close is closed then, rather than waited for until its CONNECT
// deadline.
func TestCloseEndsAConnectionThatHasNotSentItsConnect(t *testing.T) {
	s, addr, _ := faultServer(t, new(echoHook), 0, Options{ConnectTimeout: time.Hour})
	conn := dialRaw(t, addr)
	require.Eventually(t, func() bool {
		s.attachMu.Lock()
		defer s.attachMu.Unlock()
		return len(s.connecting) == 1
	}, 10*time.Second, time.Millisecond, "the connection is not attached")
	awaitClosed(t, startClose(s))
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := conn.Read(make([]byte, 1))
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection is still open")
}
