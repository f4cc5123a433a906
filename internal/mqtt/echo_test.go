// SPDX-License-Identifier: MIT

package mqtt

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/listeners"
	"github.com/dssio/dss/internal/mqtt/packets"
)

const loopTopic = "req/loop"

// echoHook answers every publish to loopTopic with its PUBACK and a
// publish to "resp" of the same payload, written from the goroutine that
// handles the request, and counts where that goroutine was; it lets
// every other publish through.
type echoHook struct {
	allowAll
	noSessionEvents
	byLoop, byReader atomic.Int64
	// size, when set, is the size of every answer's payload instead.
	size         int
	mu           sync.Mutex
	disconnected map[string]error
}

func (h *echoHook) ConsumePublish(cl *Client, pk *packets.Packet) error {
	if pk.TopicName != loopTopic {
		return nil // published as any other message
	}
	if cl.serving() {
		h.byLoop.Add(1)
	} else {
		h.byReader.Add(1)
	}
	payload := pk.Payload
	if h.size > 0 {
		payload = make([]byte, h.size)
	}
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pk.PacketID}
	out := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: "resp", Payload: payload}
	if written, err := cl.WriteNow(true, &ack, &out); err != nil || !written {
		if err := cl.Write(&ack, &out); err != nil {
			return err
		}
	}
	return packets.ErrRejectPacket
}

func (h *echoHook) Disconnected(cl *Client, err error, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.disconnected == nil {
		h.disconnected = make(map[string]error)
	}
	h.disconnected[cl.ID] = err
}

func (h *echoHook) disconnectError(id string) (error, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	err, ok := h.disconnected[id]
	return err, ok
}

// loopServer starts a server with one read loop (where the system has
// them) and the echo hook on a loopback port, and returns it with its
// address; opts, if any, change its options first.
func loopServer(t *testing.T, h *echoHook, readBuffer int, opts ...func(*Options)) (*Server, string) {
	t.Helper()
	o := &Options{
		Logger:                  logger,
		ConsumedTopic:           loopTopic,
		ReadLoops:               1,
		ClientNetReadBufferSize: readBuffer,
	}
	for _, f := range opts {
		f(o)
	}
	s := New(o)
	s.use(h)
	l := listeners.NewTCP(listeners.Config{ID: "t", Address: "127.0.0.1:0"})
	require.NoError(t, s.AddListener(l))
	require.NoError(t, s.Serve())
	if ReadLoopsAvailable {
		require.Len(t, s.readLoops, 1)
	} else {
		require.Empty(t, s.readLoops)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, l.Address()
}

// loopPeer is a client's end of a connection, speaking MQTT 5 by hand.
type loopPeer struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	next uint16
}

func dialLoop(t *testing.T, addr, id string, keepalive uint16) *loopPeer {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	p := &loopPeer{t: t, conn: conn, r: bufio.NewReader(conn)}
	connect := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: 5,
		Connect: packets.ConnectParams{
			ProtocolName:     []byte("MQTT"),
			Clean:            true,
			Keepalive:        keepalive,
			ClientIdentifier: id,
		},
	}
	var buf bytes.Buffer
	require.NoError(t, connect.ConnectEncode(&buf))
	p.write(buf.Bytes())
	typ, _ := p.read()
	require.Equal(t, packets.Connack, typ)
	return p
}

// subscribe subscribes to filter at qos with packet id pid, and reads
// the SUBACK.
func (p *loopPeer) subscribe(pid uint16, filter string, qos byte) {
	p.t.Helper()
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
		ProtocolVersion: 5,
		PacketID:        pid,
		Filters:         packets.Subscriptions{{Filter: filter, Qos: qos}},
	}
	var buf bytes.Buffer
	require.NoError(p.t, pk.SubscribeEncode(&buf))
	p.write(buf.Bytes())
	typ, _ := p.read()
	require.Equal(p.t, packets.Suback, typ)
}

func (p *loopPeer) write(b []byte) {
	p.t.Helper()
	_, err := p.conn.Write(b)
	require.NoError(p.t, err)
}

// request returns the encoding of a QoS 1 publish of payload to
// loopTopic, with the next packet id.
func (p *loopPeer) request(payload []byte) []byte {
	p.t.Helper()
	p.next++
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish, Qos: 1},
		ProtocolVersion: 5,
		TopicName:       loopTopic,
		PacketID:        p.next,
		Payload:         payload,
	}
	var buf bytes.Buffer
	require.NoError(p.t, pk.PublishEncode(&buf))
	return buf.Bytes()
}

// read reads a packet, within five seconds, and returns its type and
// body.
func (p *loopPeer) read() (byte, []byte) {
	p.t.Helper()
	typ, body, err := p.tryRead(5 * time.Second)
	require.NoError(p.t, err)
	return typ, body
}

func (p *loopPeer) tryRead(wait time.Duration) (byte, []byte, error) {
	first, body, err := readFrame(p.conn, p.r, wait)
	return first >> 4, body, err
}

// answer reads the PUBACK and the answer of request id and returns the
// answer's payload.
func (p *loopPeer) answer(id uint16) []byte {
	p.t.Helper()
	typ, body := p.read()
	require.Equal(p.t, packets.Puback, typ)
	require.Equal(p.t, id, binary.BigEndian.Uint16(body))
	typ, body = p.read()
	require.Equal(p.t, packets.Publish, typ)
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, ProtocolVersion: 5}
	require.NoError(p.t, pk.PublishDecode(body))
	require.Equal(p.t, "resp", pk.TopicName)
	return pk.Payload
}

// TestServerWithReadLoopsAnswersOnEverySystem: where the system has no
// read loops (or a connection offers no descriptor to read without
// waiting), Options.ReadLoops leaves every connection to its own
// goroutine, which answers the same requests.
func TestServerWithReadLoopsAnswersOnEverySystem(t *testing.T) {
	h := new(echoHook)
	_, addr := loopServer(t, h, 0)
	p := dialLoop(t, addr, "a", 30)
	for i := 0; i < 20; i++ {
		want := []byte(fmt.Sprintf("request %d", i))
		p.write(p.request(want))
		require.Equal(t, want, p.answer(p.next))
	}
	require.Equal(t, int64(20), h.byLoop.Load()+h.byReader.Load())
	if ReadLoopsAvailable && rawIO {
		require.Positive(t, h.byLoop.Load())
	} else {
		require.Zero(t, h.byLoop.Load())
	}
}
