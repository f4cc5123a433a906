// SPDX-License-Identifier: MIT

package mqtt

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/listeners"
	"github.com/dssio/dss/internal/mqtt/packets"
)

// takeoverConn is one MQTT 5 connection of the takeover test, written
// and read by hand.
type takeoverConn struct {
	conn net.Conn
	r    *bufio.Reader
	wmu  sync.Mutex
}

func dialTakeover(t *testing.T, addr, id string, clean bool) (*takeoverConn, packets.Packet) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	c := &takeoverConn{conn: conn, r: bufio.NewReader(conn)}
	require.NoError(t, c.send(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect: packets.ConnectParams{
			ProtocolName:     []byte("MQTT"),
			Clean:            clean,
			Keepalive:        30,
			ClientIdentifier: id,
		},
		Properties: packets.Properties{SessionExpiryInterval: 300},
	}))
	pk, err := c.read(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, packets.Connack, pk.FixedHeader.Type, id)
	require.Zero(t, pk.ReasonCode, id)
	return c, pk
}

func (c *takeoverConn) send(pk packets.Packet) error {
	pk.ProtocolVersion = 5
	var buf bytes.Buffer
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Publish:
		err = pk.PublishEncode(&buf)
	case packets.Puback:
		err = pk.PubackEncode(&buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(&buf)
	default:
		return fmt.Errorf("no encoder for packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.conn.Write(buf.Bytes())
	return err
}

// read reads and decodes the next packet (CONNACK, PUBLISH, PUBACK,
// SUBACK or DISCONNECT) within d.
func (c *takeoverConn) read(d time.Duration) (packets.Packet, error) {
	var pk packets.Packet
	first, body, err := readFrame(c.conn, c.r, d)
	if err != nil {
		return pk, err
	}
	pk.ProtocolVersion = 5
	if err := pk.FixedHeader.Decode(first); err != nil {
		return pk, err
	}
	pk.FixedHeader.Remaining = len(body)
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackDecode(body)
	case packets.Publish:
		err = pk.PublishDecode(body)
	case packets.Puback:
		err = pk.PubackDecode(body)
	case packets.Suback:
		err = pk.SubackDecode(body)
	case packets.Disconnect:
		err = pk.DisconnectDecode(body)
	}
	return pk, err
}

// takeoverReceived is what the subscriber's connections received: the
// sequence numbers, and a message delivered more than once without DUP
// if one came (the first delivery, on a connection taken over, may be
// read after the redelivery, on the next).
type takeoverReceived struct {
	mu       sync.Mutex
	seen     map[int]bool
	plain    map[int]bool // received without DUP
	badDup   []string
	received chan struct{} // signalled on every message
}

// receive reads c's messages, acknowledges them and records them in r,
// until c ends.
func (r *takeoverReceived) receive(c *takeoverConn) {
	for {
		pk, err := c.read(time.Minute)
		if err != nil || pk.FixedHeader.Type != packets.Publish {
			return // the connection was taken over
		}
		seq, _ := strconv.Atoi(string(pk.Payload))
		r.mu.Lock()
		if !pk.FixedHeader.Dup {
			if r.plain[seq] && len(r.badDup) < 10 {
				r.badDup = append(r.badDup, fmt.Sprintf("message %d again, packet id %d, without DUP", seq, pk.PacketID))
			}
			r.plain[seq] = true
		}
		r.seen[seq] = true
		r.mu.Unlock()
		select {
		case r.received <- struct{}{}:
		default:
		}
		if c.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pk.PacketID}) != nil {
			return
		}
	}
}

// A QoS 1 message acknowledged to its publisher while its subscriber
// resumes its session on a new connection (Clean Start 0, the old
// connection taken over) reaches the subscriber: on the old connection,
// again on the new one with DUP 1, or on the new one alone, but never
// nowhere. Upstream could route it to the connection taken over after
// the new one had inherited the session's messages, where it was lost.
func TestAMessagePublishedDuringATakeoverReachesTheResumedSession(t *testing.T) {
	// At most maxMessages are published, and the session may hold them
	// all: none is dropped for the bound of its unacknowledged messages.
	const maxMessages = 20000
	caps := NewDefaultServerCapabilities()
	caps.MaximumInflight = maxMessages + 1
	s := New(&Options{Logger: logger, Capabilities: caps})
	s.Options.Access = allowAll{}
	l := listeners.NewTCP(listeners.Config{ID: "t", Address: "127.0.0.1:0"})
	require.NoError(t, s.AddListener(l))
	require.NoError(t, s.Serve())
	t.Cleanup(func() { _ = s.Close() })
	addr := l.Address()

	got := &takeoverReceived{seen: map[int]bool{}, plain: map[int]bool{}, received: make(chan struct{}, 1)}
	sub, _ := dialTakeover(t, addr, "resumer", true)
	require.NoError(t, sub.send(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
		PacketID:    1,
		Filters:     packets.Subscriptions{{Filter: "takeover/#", Qos: 1}},
	}))
	suback, err := sub.read(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, packets.Suback, suback.FixedHeader.Type)
	go got.receive(sub)

	pub, _ := dialTakeover(t, addr, "publisher", true)
	var ackedMu sync.Mutex
	var acked []int
	window := make(chan int, 32) // messages published and not yet acknowledged, by sequence number
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		for seq := range window {
			pk, err := pub.read(10 * time.Second)
			if err != nil || pk.FixedHeader.Type != packets.Puback || pk.PacketID != uint16(seq%60000+1) {
				return // the check below finds the messages missing
			}
			if pk.ReasonCode < 0x80 {
				ackedMu.Lock()
				acked = append(acked, seq)
				ackedMu.Unlock()
			}
		}
	}()
	stop := make(chan struct{})
	capped := make(chan struct{}) // closed when all maxMessages are published
	publishing := make(chan error, 1)
	go func() {
		defer close(window)
		for seq := 1; ; seq++ {
			if seq > maxMessages {
				close(capped)
				<-stop
				publishing <- nil
				return
			}
			select {
			case <-stop:
				publishing <- nil
				return
			case window <- seq:
			}
			err := pub.send(packets.Packet{
				FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1},
				TopicName:   "takeover/" + strconv.Itoa(seq%4),
				PacketID:    uint16(seq%60000 + 1),
				Payload:     []byte(strconv.Itoa(seq)),
			})
			if err != nil {
				publishing <- err
				return
			}
		}
	}()

takeovers:
	for range 40 {
		select {
		case <-got.received: // the session is in use: messages reach it
		case <-capped:
			break takeovers
		}
		c, ack := dialTakeover(t, addr, "resumer", false)
		require.True(t, ack.SessionPresent, "the session is resumed")
		go got.receive(c)
	}
	close(stop)
	require.NoError(t, <-publishing)
	<-pubDone

	ackedMu.Lock()
	defer ackedMu.Unlock()
	require.NotEmpty(t, acked)
	var missing []int
	deadline := time.Now().Add(10 * time.Second)
	for {
		missing = missing[:0]
		got.mu.Lock()
		for _, seq := range acked {
			if !got.seen[seq] {
				missing = append(missing, seq)
			}
		}
		badDup := append([]string(nil), got.badDup...)
		got.mu.Unlock()
		require.Empty(t, badDup, "a message delivered twice without DUP")
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.Empty(t, missing, "of %d messages acknowledged to the publisher, these never reached the subscriber", len(acked))
}
