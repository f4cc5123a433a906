// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/mqtt/packets/packettest"

	"github.com/stretchr/testify/require"
)

const pkInfo = "packet type %v, %s"

var errClientStop = errors.New("test stop")

func newTestClient() (cl *Client, r net.Conn, w net.Conn) {
	r, w = net.Pipe()

	cl = newClient(w, &ops{
		info: new(Info),
		log:  logger,
		options: &Options{
			Capabilities: &Capabilities{
				ReceiveMaximum:             10,
				MaximumInflight:            5,
				TopicAliasMaximum:          10000,
				MaximumClientWritesPending: 3,
				maximumPacketID:            10,
			},
		},
	})

	cl.ID = "mochi"
	cl.State.Inflight.maximumSendQuota = 5
	cl.State.Inflight.sendQuota = 5
	cl.State.Inflight.maximumReceiveQuota = 10
	cl.State.Inflight.receiveQuota = 10
	cl.Properties.Props.TopicAliasMaximum = 0
	cl.Properties.Props.RequestResponseInfo = 0x1

	cl.startWriting()
	testClients.Lock()
	testClients.all = append(testClients.all, cl)
	testClients.Unlock()

	return
}

// testClients are the clients newTestClient made, whose write loops
// TestMain ends: the tests that use them (from upstream) do not stop them.
var testClients struct {
	sync.Mutex
	all []*Client
}

// stopTestClients ends the write loops of the clients newTestClient made.
func stopTestClients() {
	testClients.Lock()
	defer testClients.Unlock()
	for _, cl := range testClients.all {
		cl.Stop(nil)
	}
	testClients.all = nil
}

func TestNewInflights(t *testing.T) {
	require.NotNil(t, NewInflights().internal)
}

func TestNewClients(t *testing.T) {
	cl := NewClients()
	require.NotNil(t, cl.internal)
}

func TestClientsAdd(t *testing.T) {
	cl := NewClients()
	cl.Add(&Client{ID: "t1"})
	require.Contains(t, cl.internal, "t1")
}

func TestClientsGet(t *testing.T) {
	cl := NewClients()
	cl.Add(&Client{ID: "t1"})
	cl.Add(&Client{ID: "t2"})
	require.Contains(t, cl.internal, "t1")
	require.Contains(t, cl.internal, "t2")

	client, ok := cl.Get("t1")
	require.Equal(t, true, ok)
	require.Equal(t, "t1", client.ID)
}

func TestClientsGetAll(t *testing.T) {
	cl := NewClients()
	cl.Add(&Client{ID: "t1"})
	cl.Add(&Client{ID: "t2"})
	cl.Add(&Client{ID: "t3"})
	require.Contains(t, cl.internal, "t1")
	require.Contains(t, cl.internal, "t2")
	require.Contains(t, cl.internal, "t3")

	clients := cl.GetAll()
	require.Len(t, clients, 3)
}

func TestClientsLen(t *testing.T) {
	cl := NewClients()
	cl.Add(&Client{ID: "t1"})
	cl.Add(&Client{ID: "t2"})
	require.Contains(t, cl.internal, "t1")
	require.Contains(t, cl.internal, "t2")
	require.Equal(t, 2, cl.Len())
}

func TestClientsDelete(t *testing.T) {
	cl := NewClients()
	cl.Add(&Client{ID: "t1"})
	require.Contains(t, cl.internal, "t1")

	cl.Delete("t1")
	_, ok := cl.Get("t1")
	require.Equal(t, false, ok)
	require.Nil(t, cl.internal["t1"])
}

func TestClientsGetByListener(t *testing.T) {
	cl := NewClients()
	cl.Add(&Client{ID: "t1", State: ClientState{open: context.Background()}, Net: ClientConnection{Listener: "tcp1"}})
	cl.Add(&Client{ID: "t2", State: ClientState{open: context.Background()}, Net: ClientConnection{Listener: "ws1"}})
	require.Contains(t, cl.internal, "t1")
	require.Contains(t, cl.internal, "t2")

	clients := cl.GetByListener("tcp1")
	require.NotEmpty(t, clients)
	require.Equal(t, 1, len(clients))
	require.Equal(t, "tcp1", clients[0].Net.Listener)
}

func TestNewClient(t *testing.T) {
	cl, _, _ := newTestClient()

	require.NotNil(t, cl)
	require.NotNil(t, cl.State.Inflight.internal)
	require.NotNil(t, cl.State.Subscriptions)
	require.NotNil(t, cl.State.TopicAliases)
	require.Equal(t, defaultKeepalive, cl.State.Keepalive)
	require.Equal(t, defaultClientProtocolVersion, cl.Properties.ProtocolVersion)
	require.NotNil(t, cl.Net.Conn)
	require.NotNil(t, cl.Net.bconn)
	require.NotNil(t, cl.ops)
	require.NotNil(t, cl.ops.options.Capabilities)
	require.False(t, cl.Net.Inline)
}

func TestClientParseConnect(t *testing.T) {
	cl, _, _ := newTestClient()

	pk := packets.Packet{
		ProtocolVersion: 4,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte{'M', 'Q', 'T', 'T'},
			Clean:            true,
			Keepalive:        60,
			ClientIdentifier: "mochi",
			WillFlag:         true,
			WillTopic:        "lwt",
			WillPayload:      []byte("lol gg"),
			WillQos:          1,
			WillRetain:       false,
		},
		Properties: packets.Properties{
			ReceiveMaximum: uint16(5),
		},
	}

	cl.ParseConnect("tcp1", &pk)
	require.Equal(t, pk.Connect.ClientIdentifier, cl.ID)
	require.Equal(t, pk.Connect.Keepalive, cl.State.Keepalive)
	require.Equal(t, pk.Connect.Clean, cl.Properties.Clean)
	require.Equal(t, pk.Connect.ClientIdentifier, cl.ID)
	require.Equal(t, pk.Connect.WillTopic, cl.Properties.Will.TopicName)
	require.Equal(t, pk.Connect.WillPayload, cl.Properties.Will.Payload)
	require.Equal(t, pk.Connect.WillQos, cl.Properties.Will.Qos)
	require.Equal(t, pk.Connect.WillRetain, cl.Properties.Will.Retain)
	require.Equal(t, uint32(1), cl.Properties.Will.Flag)
	require.Equal(t, int32(cl.ops.options.Capabilities.ReceiveMaximum), cl.State.Inflight.receiveQuota)
	require.Equal(t, int32(cl.ops.options.Capabilities.ReceiveMaximum), cl.State.Inflight.maximumReceiveQuota)
	require.Equal(t, int32(pk.Properties.ReceiveMaximum), cl.State.Inflight.sendQuota)
	require.Equal(t, int32(pk.Properties.ReceiveMaximum), cl.State.Inflight.maximumSendQuota)
}

func TestClientParseConnectReceiveMaxExceedMaxInflight(t *testing.T) {
	const MaxInflight uint16 = 1
	cl, _, _ := newTestClient()
	cl.ops.options.Capabilities.MaximumInflight = MaxInflight

	pk := packets.Packet{
		ProtocolVersion: 4,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte{'M', 'Q', 'T', 'T'},
			Clean:            true,
			Keepalive:        60,
			ClientIdentifier: "mochi",
			WillFlag:         true,
			WillTopic:        "lwt",
			WillPayload:      []byte("lol gg"),
			WillQos:          1,
			WillRetain:       false,
		},
		Properties: packets.Properties{
			ReceiveMaximum: uint16(5),
		},
	}

	cl.ParseConnect("tcp1", &pk)
	require.Equal(t, pk.Connect.ClientIdentifier, cl.ID)
	require.Equal(t, pk.Connect.Keepalive, cl.State.Keepalive)
	require.Equal(t, pk.Connect.Clean, cl.Properties.Clean)
	require.Equal(t, pk.Connect.ClientIdentifier, cl.ID)
	require.Equal(t, pk.Connect.WillTopic, cl.Properties.Will.TopicName)
	require.Equal(t, pk.Connect.WillPayload, cl.Properties.Will.Payload)
	require.Equal(t, pk.Connect.WillQos, cl.Properties.Will.Qos)
	require.Equal(t, pk.Connect.WillRetain, cl.Properties.Will.Retain)
	require.Equal(t, uint32(1), cl.Properties.Will.Flag)
	require.Equal(t, int32(cl.ops.options.Capabilities.ReceiveMaximum), cl.State.Inflight.receiveQuota)
	require.Equal(t, int32(cl.ops.options.Capabilities.ReceiveMaximum), cl.State.Inflight.maximumReceiveQuota)
	require.Equal(t, int32(MaxInflight), cl.State.Inflight.sendQuota)
	require.Equal(t, int32(MaxInflight), cl.State.Inflight.maximumSendQuota)
}

func TestClientParseConnectOverrideWillDelay(t *testing.T) {
	cl, _, _ := newTestClient()

	pk := packets.Packet{
		ProtocolVersion: 4,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte{'M', 'Q', 'T', 'T'},
			Clean:            true,
			Keepalive:        60,
			ClientIdentifier: "mochi",
			WillFlag:         true,
			WillProperties: packets.Properties{
				WillDelayInterval: 200,
			},
		},
		Properties: packets.Properties{
			SessionExpiryInterval:     100,
			SessionExpiryIntervalFlag: true,
		},
	}

	cl.ParseConnect("tcp1", &pk)
	require.Equal(t, pk.Properties.SessionExpiryInterval, cl.Properties.Will.WillDelayInterval)
}

func TestClientParseConnectNoID(t *testing.T) {
	cl, _, _ := newTestClient()
	cl.ParseConnect("tcp1", &packets.Packet{})
	require.NotEmpty(t, cl.ID)
}

func TestClientParseConnectBelowMinimumKeepalive(t *testing.T) {
	cl, _, _ := newTestClient()
	var b bytes.Buffer
	x := bufio.NewWriter(&b)
	// dss: the line is logged at Debug level.
	cl.ops.log = slog.New(slog.NewTextHandler(x, &slog.HandlerOptions{Level: slog.LevelDebug}))

	pk := packets.Packet{
		ProtocolVersion: 4,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte{'M', 'Q', 'T', 'T'},
			Keepalive:        minimumKeepalive - 1,
			ClientIdentifier: "mochi",
		},
	}
	cl.ParseConnect("tcp1", &pk)
	err := x.Flush()
	require.NoError(t, err)
	require.True(t, strings.Contains(b.String(), ErrMinimumKeepalive.Error()))
	require.NotEmpty(t, cl.ID)
}

func TestClientNextPacketID(t *testing.T) {
	cl, _, _ := newTestClient()

	i, err := cl.NextPacketID()
	require.NoError(t, err)
	require.Equal(t, uint32(1), i)

	i, err = cl.NextPacketID()
	require.NoError(t, err)
	require.Equal(t, uint32(2), i)
}

func TestClientNextPacketIDInUse(t *testing.T) {
	cl, _, _ := newTestClient()

	// skip over 2
	cl.State.Inflight.Set(&packets.Packet{PacketID: 2})

	i, err := cl.NextPacketID()
	require.NoError(t, err)
	require.Equal(t, uint32(1), i)

	i, err = cl.NextPacketID()
	require.NoError(t, err)
	require.Equal(t, uint32(3), i)

	// Skip over overflow
	cl.State.Inflight.Set(&packets.Packet{PacketID: 65535})
	atomic.StoreUint32(&cl.State.packetID, 65534)

	i, err = cl.NextPacketID()
	require.NoError(t, err)
	require.Equal(t, uint32(1), i)
}

func TestClientNextPacketIDExhausted(t *testing.T) {
	cl, _, _ := newTestClient()
	for i := uint32(1); i <= cl.ops.options.Capabilities.maximumPacketID; i++ {
		cl.State.Inflight.internal[i] = &inflightEntry{pk: packets.Packet{PacketID: uint16(i)}}
	}

	i, err := cl.NextPacketID()
	require.Error(t, err)
	require.ErrorIs(t, err, packets.ErrQuotaExceeded)
	require.Equal(t, uint32(0), i)
}

func TestClientNextPacketIDOverflow(t *testing.T) {
	cl, _, _ := newTestClient()
	for i := uint32(0); i < cl.ops.options.Capabilities.maximumPacketID; i++ {
		cl.State.Inflight.internal[uint32(i)] = &inflightEntry{}
	}

	cl.State.packetID = cl.ops.options.Capabilities.maximumPacketID - 1
	i, err := cl.NextPacketID()
	require.NoError(t, err)
	require.Equal(t, cl.ops.options.Capabilities.maximumPacketID, i)
	cl.State.Inflight.internal[cl.ops.options.Capabilities.maximumPacketID] = &inflightEntry{}

	cl.State.packetID = cl.ops.options.Capabilities.maximumPacketID
	_, err = cl.NextPacketID()
	require.Error(t, err)
	require.ErrorIs(t, err, packets.ErrQuotaExceeded)
}

func TestClientClearInflights(t *testing.T) {
	cl, _, _ := newTestClient()
	n := time.Now().Unix()

	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 1, Expiry: n - 1})
	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 2, Expiry: n - 2})
	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 3, Created: n - 3}) // within bounds
	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 5, Created: n - 5}) // over max server expiry limit
	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 7, Created: n})

	require.Equal(t, 5, cl.State.Inflight.Len())
	cl.ClearInflights()
	require.Equal(t, 0, cl.State.Inflight.Len())
}

func TestClientClearExpiredInflights(t *testing.T) {
	cl, _, _ := newTestClient()

	n := time.Now().Unix()
	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 1, Expiry: n - 1})
	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 2, Expiry: n - 2})
	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 3, Created: n - 3}) // within bounds
	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 5, Created: n - 5}) // over max server expiry limit
	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 7, Created: n})
	require.Equal(t, 5, cl.State.Inflight.Len())

	deleted := cl.ClearExpiredInflights(n, 4)
	require.Len(t, deleted, 3)
	require.ElementsMatch(t, []uint16{1, 2, 5}, deleted)
	require.Equal(t, 2, cl.State.Inflight.Len())

	cl.State.Inflight.Set(&packets.Packet{PacketID: 11, Expiry: n - 1})
	cl.State.Inflight.Set(&packets.Packet{PacketID: 12, Expiry: n - 2})  // expiry is ineffective for v3.
	cl.State.Inflight.Set(&packets.Packet{PacketID: 13, Created: n - 3}) // within bounds for v3
	cl.State.Inflight.Set(&packets.Packet{PacketID: 15, Created: n - 5}) // over max server expiry limit
	require.Equal(t, 6, cl.State.Inflight.Len())

	deleted = cl.ClearExpiredInflights(n, 4)
	require.Len(t, deleted, 3)
	require.ElementsMatch(t, []uint16{11, 12, 15}, deleted)
	require.Equal(t, 3, cl.State.Inflight.Len())

	cl.State.Inflight.Set(&packets.Packet{PacketID: 17, Created: n - 1})
	deleted = cl.ClearExpiredInflights(n, 0) // maximumExpiry = 0 do not process abandon messages
	require.Len(t, deleted, 0)
	require.Equal(t, 4, cl.State.Inflight.Len())

	cl.State.Inflight.Set(&packets.Packet{ProtocolVersion: 5, PacketID: 18, Expiry: n - 1})
	deleted = cl.ClearExpiredInflights(n, 0)        // maximumExpiry = 0 do not abandon messages
	require.ElementsMatch(t, []uint16{18}, deleted) // expiry is still effective for v5.
	require.Len(t, deleted, 1)
	require.Equal(t, 4, cl.State.Inflight.Len())
}

func TestClientResendInflightMessages(t *testing.T) {
	pk1 := packettest.TPacketData[packets.Puback].Get(packettest.TPuback)
	cl, r, w := newTestClient()

	cl.State.Inflight.Set(pk1.Packet)
	require.Equal(t, 1, cl.State.Inflight.Len())

	go func() {
		err := cl.ResendInflightMessages(true)
		require.NoError(t, err)
		// A write to a net.Pipe returns once the reader took every byte.
		_ = w.Close()
	}()

	buf, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, 0, cl.State.Inflight.Len())
	require.Equal(t, pk1.RawBytes, buf)
}

// TestClientResendInflightMessagesQueuedIsFirstDelivery: "The DUP flag
// MUST be set to 1 by the Client or Server when it attempts to re-deliver
// a PUBLISH packet" and "MUST be set to 0 for all QoS 0 messages"; a
// message queued for a session without a connection is delivered for
// the first time when the client comes back: DUP 0 [MQTT-3.3.1-1]. Sent
// again on a later reconnect, it is a redelivery: DUP 1.
func TestClientResendInflightMessagesQueuedIsFirstDelivery(t *testing.T) {
	pk := *packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).Packet
	pk.Queued = true
	cl, _, _ := newTestClient()
	cl.ops.options.Access = allowAll{} // the resent message is authorized
	cl.State.Inflight.Set(&pk)
	for _, wantDup := range []bool{false, true} {
		r, w := net.Pipe()
		cl.Net.Conn = w
		go func() {
			err := cl.ResendInflightMessages(true)
			require.NoError(t, err)
			_ = w.Close()
		}()
		buf, err := io.ReadAll(r)
		require.NoError(t, err)
		require.NotEmpty(t, buf)
		require.Equal(t, wantDup, buf[0]&0x08 != 0, "DUP of %08b", buf[0])
	}
}

func TestClientResendInflightMessagesWriteFailure(t *testing.T) {
	pk1 := packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1Dup)
	cl, r, _ := newTestClient()
	_ = r.Close()
	cl.ops.options.Access = allowAll{} // the resent message is authorized

	cl.State.Inflight.Set(pk1.Packet)
	require.Equal(t, 1, cl.State.Inflight.Len())
	err := cl.ResendInflightMessages(true)
	require.Error(t, err)
	require.ErrorIs(t, err, io.ErrClosedPipe)
	require.Equal(t, 1, cl.State.Inflight.Len())
}

func TestClientResendInflightMessagesNoMessages(t *testing.T) {
	cl, _, _ := newTestClient()
	err := cl.ResendInflightMessages(true)
	require.NoError(t, err)
}

func TestClientRefreshDeadline(t *testing.T) {
	cl, _, _ := newTestClient()
	cl.refreshDeadline(10)
	require.NotNil(t, cl.Net.Conn) // how do we check net.Conn deadline?
}

func TestClientReadFixedHeader(t *testing.T) {
	cl, r, _ := newTestClient()

	defer cl.Stop(errClientStop)
	go func() {
		_, _ = r.Write([]byte{packets.Connect << 4, 0x00})
		_ = r.Close()
	}()

	fh := new(packets.FixedHeader)
	err := cl.ReadFixedHeader(fh)
	require.NoError(t, err)
	require.Equal(t, int64(2), atomic.LoadInt64(&cl.ops.info.BytesReceived))
}

func TestClientReadFixedHeaderDecodeError(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)

	go func() {
		_, _ = r.Write([]byte{packets.Connect<<4 | 1<<1, 0x00, 0x00})
		_ = r.Close()
	}()

	fh := new(packets.FixedHeader)
	err := cl.ReadFixedHeader(fh)
	require.Error(t, err)
}

func TestClientReadFixedHeaderPacketOversized(t *testing.T) {
	cl, r, _ := newTestClient()
	cl.ops.options.Capabilities.MaximumPacketSize = 2
	defer cl.Stop(errClientStop)

	go func() {
		_, _ = r.Write(packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1Dup).RawBytes)
		_ = r.Close()
	}()

	fh := new(packets.FixedHeader)
	err := cl.ReadFixedHeader(fh)
	require.Error(t, err)
	require.ErrorIs(t, err, packets.ErrPacketTooLarge)
}

// The Maximum Packet Size counts every byte of a packet: one whose
// remaining length takes two bytes and whose whole is one byte over the
// maximum is refused, one of exactly the maximum is not.
func TestClientReadFixedHeaderCountsTheWholePacketAgainstTheMaximum(t *testing.T) {
	for _, c := range []struct {
		total int
		err   error
	}{{2048, nil}, {2049, packets.ErrPacketTooLarge}} {
		cl, r, _ := newTestClient()
		cl.ops.options.Capabilities.MaximumPacketSize = 2048
		remaining := c.total - 3 // the type byte and two bytes of length
		go func() {
			_, _ = r.Write([]byte{packets.Publish << 4, byte(remaining&0x7f) | 0x80, byte(remaining >> 7)})
			_ = r.Close()
		}()
		fh := new(packets.FixedHeader)
		err := cl.ReadFixedHeader(fh)
		if c.err == nil {
			require.NoError(t, err, "a packet of %d bytes", c.total)
			require.Equal(t, remaining, fh.Remaining)
		} else {
			require.ErrorIs(t, err, c.err, "a packet of %d bytes", c.total)
		}
		cl.Stop(errClientStop)
	}
}

func TestClientReadFixedHeaderReadEOF(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)

	go func() {
		_ = r.Close()
	}()

	fh := new(packets.FixedHeader)
	err := cl.ReadFixedHeader(fh)
	require.Error(t, err)
	require.Equal(t, io.EOF, err)
}

func TestClientReadFixedHeaderNoLengthTerminator(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)

	go func() {
		_, _ = r.Write([]byte{packets.Connect << 4, 0xd5, 0x86, 0xf9, 0x9e, 0x01})
		_ = r.Close()
	}()

	fh := new(packets.FixedHeader)
	err := cl.ReadFixedHeader(fh)
	require.Error(t, err)
}

func TestClientReadOK(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)
	go func() {
		_, _ = r.Write([]byte{
			packets.Publish << 4, 18, // Fixed header
			0, 5, // Topic Name - LSB+MSB
			'a', '/', 'b', '/', 'c', // Topic Name
			'h', 'e', 'l', 'l', 'o', ' ', 'm', 'o', 'c', 'h', 'i', // Payload,
			packets.Publish << 4, 11, // Fixed header
			0, 5, // Topic Name - LSB+MSB
			'd', '/', 'e', '/', 'f', // Topic Name
			'y', 'e', 'a', 'h', // Payload
		})
		_ = r.Close()
	}()

	var pks []packets.Packet
	o := make(chan error)
	go func() {
		o <- cl.Read(func(cl *Client, pk *packets.Packet) error {
			pks = append(pks, *pk)
			return nil
		})
	}()

	err := <-o
	require.Error(t, err)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, 2, len(pks))
	require.Equal(t, []packets.Packet{
		{
			ProtocolVersion: cl.Properties.ProtocolVersion,
			FixedHeader: packets.FixedHeader{
				Type:      packets.Publish,
				Remaining: 18,
			},
			TopicName: "a/b/c",
			Payload:   []byte("hello mochi"),
		},
		{
			ProtocolVersion: cl.Properties.ProtocolVersion,
			FixedHeader: packets.FixedHeader{
				Type:      packets.Publish,
				Remaining: 11,
			},
			TopicName: "d/e/f",
			Payload:   []byte("yeah"),
		},
	}, pks)

	require.Equal(t, int64(2), atomic.LoadInt64(&cl.ops.info.MessagesReceived))
}

func TestClientReadDone(t *testing.T) {
	cl, _, _ := newTestClient()
	defer cl.Stop(errClientStop)
	cl.State.cancelOpen()

	o := make(chan error)
	go func() {
		o <- cl.Read(func(cl *Client, pk *packets.Packet) error {
			return nil
		})
	}()

	require.NoError(t, <-o)
}

func TestClientStop(t *testing.T) {
	cl, _, _ := newTestClient()
	require.Equal(t, int64(0), cl.StopTime())
	cl.Stop(nil)
	require.Equal(t, nil, cl.State.stopCause.Load())
	require.InDelta(t, time.Now().Unix(), cl.State.disconnected, 1.0)
	require.Equal(t, cl.State.disconnected, cl.StopTime())
	require.True(t, cl.Closed())
	require.Equal(t, nil, cl.StopCause())
}

func TestClientClosed(t *testing.T) {
	cl, _, _ := newTestClient()
	require.False(t, cl.Closed())
	cl.Stop(nil)
	require.True(t, cl.Closed())
}

func TestClientIsTakenOver(t *testing.T) {
	cl, _, _ := newTestClient()
	require.False(t, cl.IsTakenOver())
	cl.State.isTakenOver.Store(true)
	require.True(t, cl.IsTakenOver())
}

func TestClientReadFixedHeaderError(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)
	go func() {
		_, _ = r.Write([]byte{
			packets.Publish << 4, 11, // Fixed header
		})
		_ = r.Close()
	}()

	cl.Net.bconn = nil
	fh := new(packets.FixedHeader)
	err := cl.ReadFixedHeader(fh)
	require.Error(t, err)
	require.ErrorIs(t, ErrConnectionClosed, err)
}

func TestClientReadReadHandlerErr(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)
	go func() {
		_, _ = r.Write([]byte{
			packets.Publish << 4, 11, // Fixed header
			0, 5, // Topic Name - LSB+MSB
			'd', '/', 'e', '/', 'f', // Topic Name
			'y', 'e', 'a', 'h', // Payload
		})
		_ = r.Close()
	}()

	err := cl.Read(func(cl *Client, pk *packets.Packet) error {
		return errors.New("test")
	})

	require.Error(t, err)
}

func TestClientReadReadPacketOK(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)
	go func() {
		_, _ = r.Write([]byte{
			packets.Publish << 4, 11, // Fixed header
			0, 5,
			'd', '/', 'e', '/', 'f',
			'y', 'e', 'a', 'h',
		})
		_ = r.Close()
	}()

	fh := new(packets.FixedHeader)
	err := cl.ReadFixedHeader(fh)
	require.NoError(t, err)

	var pk packets.Packet
	err = cl.ReadPacket(fh, &pk)
	require.NoError(t, err)

	require.Equal(t, packets.Packet{
		ProtocolVersion: cl.Properties.ProtocolVersion,
		FixedHeader: packets.FixedHeader{
			Type:      packets.Publish,
			Remaining: 11,
		},
		TopicName: "d/e/f",
		Payload:   []byte("yeah"),
	}, pk)
}

func TestClientReadPacket(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)

	for _, tx := range pkTable {
		tt := tx // avoid data race
		t.Run(tt.Desc, func(t *testing.T) {
			go func() {
				_, _ = r.Write(tt.RawBytes)
			}()

			fh := new(packets.FixedHeader)
			err := cl.ReadFixedHeader(fh)
			require.NoError(t, err)

			if tt.Packet.ProtocolVersion == 5 {
				cl.Properties.ProtocolVersion = 5
			} else {
				cl.Properties.ProtocolVersion = 0
			}

			var pk packets.Packet
			err = cl.ReadPacket(fh, &pk)
			require.NoError(t, err, pkInfo, tt.Case, tt.Desc)
			require.Equal(t, *tt.Packet, pk, pkInfo, tt.Case, tt.Desc)

			if tt.Packet.FixedHeader.Type == packets.Publish {
			}
		})
	}
}

func TestClientReadPacketInvalidTypeError(t *testing.T) {
	cl, _, _ := newTestClient()
	_ = cl.Net.Conn.Close()
	err := cl.ReadPacket(&packets.FixedHeader{}, new(packets.Packet))
	require.ErrorIs(t, err, packets.ErrMalformedPacket) // dss: the reserved type 0 is malformed
}

func TestClientWrite(t *testing.T) {
	for _, tt := range pkTable {
		cl, r, _ := newTestClient()
		defer cl.Stop(errClientStop)

		cl.Properties.ProtocolVersion = tt.Packet.ProtocolVersion

		o := make(chan []byte)
		go func() {
			buf, err := io.ReadAll(r)
			require.NoError(t, err)
			o <- buf
		}()

		pk := *tt.Packet
		err := cl.Write(&pk)
		require.NoError(t, err, pkInfo, tt.Case, tt.Desc)

		// A write to a net.Pipe returns once the reader took every byte.
		_ = cl.Net.Conn.Close()

		require.Equal(t, tt.RawBytes, <-o, pkInfo, tt.Case, tt.Desc)

		cl.Stop(errClientStop)

		// The stop cause is either the test error, EOF, or a
		// closed pipe, depending on which goroutine runs first.
		err = cl.StopCause()
		require.True(t,
			errors.Is(err, errClientStop) ||
				errors.Is(err, io.EOF) ||
				errors.Is(err, io.ErrClosedPipe))

		require.Equal(t, int64(len(tt.RawBytes)), atomic.LoadInt64(&cl.ops.info.BytesSent))
		if tt.Packet.FixedHeader.Type == packets.Publish {
			require.Equal(t, int64(1), atomic.LoadInt64(&cl.ops.info.MessagesSent))
		}
	}
}

// dss: the write loop sends everything queued with one write, packets
// with their acknowledgements in order, and the queue holds no more than
// MaximumClientWritesPending entries.
func TestClientWriteLoopBatches(t *testing.T) {
	r, w := net.Pipe()
	cl := newClient(w, &ops{
		info: new(Info),
		log:  logger,
		options: &Options{
			Capabilities: &Capabilities{
				MaximumClientWritesPending: 3,
				maximumPacketID:            10,
			},
		},
	})
	defer cl.Stop(errClientStop)
	cl.Properties.ProtocolVersion = 5

	small := *packettest.TPacketData[packets.Publish].Get(packettest.TPublishNoPayload).Packet
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: 7}
	p1, p2, a := small, small, ack // the write loop prepares them in place
	owner := new(countingOwner)
	p1.Owner = owner
	require.True(t, cl.enqueue(pendingWrite{pk: &p1}))
	require.True(t, cl.enqueue(pendingWrite{pk: &p2, ack: &a}))
	require.True(t, cl.Queue(&small))
	require.False(t, cl.Queue(&small), "a fourth entry is over the limit")
	require.Equal(t, int32(1), owner.n.Load(), "the queue holds the owner of what it holds")
	require.Equal(t, int32(3), atomic.LoadInt32(&cl.State.outboundQty))

	var want bytes.Buffer
	for _, pk := range []packets.Packet{small, ack, small, small} {
		pk.ProtocolVersion, pk.Mods.AllowResponseInfo = 5, true
		switch pk.FixedHeader.Type {
		case packets.Puback:
			require.NoError(t, pk.PubackEncode(&want))
		default:
			require.NoError(t, pk.PublishEncode(&want))
		}
	}

	cl.startWriting()
	got := make([]byte, want.Len())
	n, err := io.ReadFull(r, got)
	require.NoError(t, err)
	require.Equal(t, want.Bytes(), got[:n])
	require.Eventually(t, func() bool { return atomic.LoadInt32(&cl.State.outboundQty) == 0 }, time.Second, time.Millisecond)
	require.Equal(t, int32(0), owner.n.Load(), "and lets go of it once written")
	require.True(t, cl.Queue(&small), "the queue has room again")
}

func TestWriteClientOversizePacket(t *testing.T) {
	cl, _, _ := newTestClient()
	cl.Properties.Props.MaximumPacketSize = 2
	pk := *packettest.TPacketData[packets.Publish].Get(packettest.TPublishDropOversize).Packet
	err := cl.Write(&pk)
	require.Error(t, err)
	require.ErrorIs(t, packets.ErrPacketTooLarge, err)
}

func TestClientReadPacketReadingError(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)
	go func() {
		_, _ = r.Write([]byte{
			0, 11, // Fixed header
			0, 5,
			'd', '/', 'e', '/', 'f',
			'y', 'e', 'a', 'h',
		})
		_ = r.Close()
	}()

	err := cl.ReadPacket(&packets.FixedHeader{
		Type:      0,
		Remaining: 11,
	}, new(packets.Packet))
	require.Error(t, err)
}

func TestClientReadPacketReadUnknown(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)
	go func() {
		_, _ = r.Write([]byte{
			0, 11, // Fixed header
			0, 5,
			'd', '/', 'e', '/', 'f',
			'y', 'e', 'a', 'h',
		})
		_ = r.Close()
	}()

	err := cl.ReadPacket(&packets.FixedHeader{
		Remaining: 1,
	}, new(packets.Packet))
	require.Error(t, err)
}

func TestClientWriteWriteNoConn(t *testing.T) {
	cl, _, _ := newTestClient()
	cl.Stop(errClientStop)

	pk := *pkTable[1].Packet
	err := cl.Write(&pk)
	require.Error(t, err)
	require.Equal(t, ErrConnectionClosed, err)
}

func TestClientWriteWriteError(t *testing.T) {
	cl, _, _ := newTestClient()
	_ = cl.Net.Conn.Close()

	pk := *pkTable[1].Packet
	err := cl.Write(&pk)
	require.Error(t, err)
}

func TestClientWriteInvalidPacket(t *testing.T) {
	cl, _, _ := newTestClient()
	err := cl.Write(&packets.Packet{})
	require.Error(t, err)
}

var (
	pkTable = []packettest.TPacketCase{
		packettest.TPacketData[packets.Connect].Get(packettest.TConnectMqtt311),
		packettest.TPacketData[packets.Connack].Get(packettest.TConnackAcceptedMqtt5),
		packettest.TPacketData[packets.Connack].Get(packettest.TConnackAcceptedNoSession),
		packettest.TPacketData[packets.Publish].Get(packettest.TPublishBasic),
		packettest.TPacketData[packets.Publish].Get(packettest.TPublishMqtt5),
		packettest.TPacketData[packets.Puback].Get(packettest.TPuback),
		packettest.TPacketData[packets.Pubrec].Get(packettest.TPubrec),
		packettest.TPacketData[packets.Pubrel].Get(packettest.TPubrel),
		packettest.TPacketData[packets.Pubcomp].Get(packettest.TPubcomp),
		packettest.TPacketData[packets.Subscribe].Get(packettest.TSubscribe),
		packettest.TPacketData[packets.Subscribe].Get(packettest.TSubscribeMqtt5),
		packettest.TPacketData[packets.Suback].Get(packettest.TSuback),
		packettest.TPacketData[packets.Suback].Get(packettest.TSubackMqtt5),
		packettest.TPacketData[packets.Unsubscribe].Get(packettest.TUnsubscribe),
		packettest.TPacketData[packets.Unsubscribe].Get(packettest.TUnsubscribeMqtt5),
		packettest.TPacketData[packets.Unsuback].Get(packettest.TUnsuback),
		packettest.TPacketData[packets.Unsuback].Get(packettest.TUnsubackMqtt5),
		packettest.TPacketData[packets.Pingreq].Get(packettest.TPingreq),
		packettest.TPacketData[packets.Pingresp].Get(packettest.TPingresp),
		packettest.TPacketData[packets.Disconnect].Get(packettest.TDisconnect),
		packettest.TPacketData[packets.Disconnect].Get(packettest.TDisconnectMqtt5),
		packettest.TPacketData[packets.Auth].Get(packettest.TAuth),
	}
)

// dss: Write writes several packets with one write, in order, and
// still writes the others when one of them cannot be encoded.
func TestClientWrites(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)
	cl.Properties.ProtocolVersion = 5

	o := make(chan []byte)
	go func() {
		buf, err := io.ReadAll(r)
		require.NoError(t, err)
		o <- buf
	}()

	puback := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: 7}
	pub := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, TopicName: "a/b", PacketID: 9, Payload: []byte("hello")}
	tooLarge := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: "a/b", Payload: make([]byte, 100), Mods: packets.Mods{MaxSize: 20}}
	err := cl.Write(&puback, &tooLarge, &pub)
	require.ErrorIs(t, err, packets.ErrPacketTooLarge)

	// A write to a net.Pipe returns once the reader took every byte.
	_ = cl.Net.Conn.Close()

	var want bytes.Buffer
	require.NoError(t, puback.PubackEncode(&want))
	require.NoError(t, pub.PublishEncode(&want))
	require.Equal(t, want.Bytes(), <-o)
}

// dss: publishes to Options.ConsumedTopic are decoded in the connection's
// buffers, reused packet after packet; every other publish, and one that
// sets a topic alias, keeps memory of its own.
func TestClientReadPacketConsumedTopic(t *testing.T) {
	cl, r, _ := newTestClient()
	defer cl.Stop(errClientStop)
	cl.ops.options.ConsumedTopic = "req"
	cl.Properties.ProtocolVersion = 5

	read := func(pk packets.Packet) packets.Packet {
		t.Helper()
		pk.FixedHeader.Type = packets.Publish
		pk.FixedHeader.Qos = 1
		pk.PacketID = 7
		pk.ProtocolVersion = 5
		var buf bytes.Buffer
		require.NoError(t, pk.PublishEncode(&buf))
		go func() { _, _ = r.Write(buf.Bytes()) }()
		fh := new(packets.FixedHeader)
		require.NoError(t, cl.ReadFixedHeader(fh))
		var got packets.Packet
		require.NoError(t, cl.ReadPacket(fh, &got))
		return got
	}
	user := []packets.UserProperty{{Key: "k", Val: "v1"}}

	first := read(packets.Packet{TopicName: "req", Payload: []byte("one"), Properties: packets.Properties{User: user}})
	require.Equal(t, "one", string(first.Payload))
	require.Equal(t, user, first.Properties.User)
	second := read(packets.Packet{TopicName: "req", Payload: []byte("two"), Properties: packets.Properties{User: []packets.UserProperty{{Key: "k", Val: "v2"}}}})
	require.Equal(t, "two", string(second.Payload))
	// The first packet's bytes and user properties were reused.
	require.Equal(t, "two", string(first.Payload))
	require.Equal(t, "v2", first.Properties.User[0].Val)
	require.Equal(t, &first.Properties.User[0], &second.Properties.User[0])

	none := read(packets.Packet{TopicName: "req", Payload: []byte("three")})
	require.Nil(t, none.Properties.User)

	other := read(packets.Packet{TopicName: "other", Payload: []byte("kept"), Properties: packets.Properties{User: user}})
	aliased := read(packets.Packet{TopicName: "req", Payload: []byte("alias"), Properties: packets.Properties{TopicAlias: 1, TopicAliasFlag: true, User: user}})
	read(packets.Packet{TopicName: "req", Payload: []byte("later"), Properties: packets.Properties{User: []packets.UserProperty{{Key: "k", Val: "v3"}}}})
	require.Equal(t, "kept", string(other.Payload))
	require.Equal(t, "other", other.TopicName)
	require.Equal(t, user, other.Properties.User)
	require.Equal(t, "alias", string(aliased.Payload))
	require.Equal(t, "req", aliased.TopicName)
	require.Equal(t, user, aliased.Properties.User)
}

func TestPublishesTo(t *testing.T) {
	require.True(t, publishesTo([]byte{0, 3, 'r', 'e', 'q', 0, 1}, "req"))
	require.False(t, publishesTo([]byte{0, 3, 'r', 'e', 'x'}, "req"))
	require.False(t, publishesTo([]byte{0, 4, 'r', 'e', 'q'}, "req"))
	require.False(t, publishesTo([]byte{0, 3, 'r', 'e'}, "req"))
	require.False(t, publishesTo([]byte{0}, "req"))
}

// dss: Closed reads a flag that cancelOpen sets with the context.
func TestClientClosedFollowsItsContext(t *testing.T) {
	cl, _, _ := newTestClient()
	require.False(t, cl.Closed())
	cl.State.cancelOpen()
	require.True(t, cl.Closed())
	require.Error(t, cl.State.open.Err())

	cl, _, _ = newTestClient()
	cl.Stop(errClientStop)
	require.True(t, cl.Closed())
	require.Error(t, cl.State.open.Err())

	require.True(t, (&Client{}).Closed(), "a client that was never opened")
	require.False(t, (&Client{State: ClientState{open: context.Background()}}).Closed())
}

// waitWritten waits until nothing is queued for the write loops of cls or
// being written by them, for a minute at most: what was sent to them
// before has then reached their connections' other ends (a net.Pipe
// hands bytes over only to a reader), and a test may close them.
//
// dss: the tests slept for a moment instead, which a loaded machine
// outlasts.
func waitWritten(cls ...*Client) {
	deadline := time.Now().Add(time.Minute)
	for _, cl := range cls {
		for atomic.LoadInt32(&cl.State.outboundQty) != 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
}

func TestKeepaliveTimeoutIsOneAndAHalfKeepalives(t *testing.T) {
	for keepalive, want := range map[uint16]time.Duration{
		0:     0,
		1:     1500 * time.Millisecond, // upstream: 1 s
		3:     4500 * time.Millisecond, // upstream: 4 s
		30:    45 * time.Second,
		65535: 98302*time.Second + 500*time.Millisecond,
	} {
		require.Equal(t, want, keepaliveTimeout(keepalive), "keepalive %d", keepalive)
	}
}
