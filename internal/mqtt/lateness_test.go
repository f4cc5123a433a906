// SPDX-License-Identifier: MIT

//go:build unix

package mqtt

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// A read whose deadline passed while the client's bytes waited in the
// socket, as when the server was stopped for longer than the keepalive,
// reads them; one with nothing waiting ends with the deadline.
func TestAReadPastItsDeadlineReadsWhatTheClientSent(t *testing.T) {
	cl, peer := tcpTestClient(t)
	cl.State.Keepalive = 2
	cl.Net.src.stillSending = cl.stillSending

	_, err := peer.Write([]byte{packets.Pingreq << 4, 0})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return socketReadable(cl.Net.Conn) }, 5*time.Second, time.Millisecond)
	require.NoError(t, cl.Net.Conn.SetDeadline(time.Now().Add(-time.Second)))
	var fh packets.FixedHeader
	require.NoError(t, cl.ReadFixedHeader(&fh), "the PINGREQ in the socket was not read")
	require.Equal(t, packets.Pingreq, fh.Type)
	require.True(t, cl.Net.deadlineAt.After(time.Now()), "the keepalive's deadline did not start again")

	require.NoError(t, cl.Net.Conn.SetDeadline(time.Now().Add(-time.Second)))
	err = cl.ReadFixedHeader(&fh)
	require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "nothing was sent, yet the read did not end: %v", err)
}

// A write whose deadline passed while the client reads what it is sent
// goes out, on both ways of writing.
func TestAWritePastItsDeadlineToAReadingClientGoesOut(t *testing.T) {
	cl, peer := tcpTestClient(t)
	cl.State.Keepalive = 2
	ping := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingresp}}
	for _, wait := range []bool{true, false} {
		require.NoError(t, cl.Net.Conn.SetDeadline(time.Now().Add(-time.Second)))
		written, err := cl.WriteNow(wait, &ping)
		require.NoError(t, err)
		require.True(t, written)
		_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 2)
		_, err = peer.Read(b)
		require.NoError(t, err)
		require.Equal(t, byte(packets.Pingresp<<4), b[0])
	}
}
