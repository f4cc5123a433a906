package conformance

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// wait bounds every read of a test; quiet is how long a test listens for
// a packet that must not come.
const (
	wait  = 10 * time.Second
	quiet = 300 * time.Millisecond
)

// start starts a server with cfg on a random loopback port and returns
// its address. With DSS_CONFORMANCE_TARGET=cluster it starts a 3-node
// cluster with cfg on every node instead, and returns a balancer in front
// of it that hands each connection to the next node: where a statement
// involves two clients (a publisher and a subscriber, a session and the
// connection that takes it over), they are on different nodes.
func start(t *testing.T, cfg server.Config) string {
	t.Helper()
	switch target := os.Getenv(targetEnv); target {
	case "", "single":
		return dsstest.StartServer(t, cfg).Addr()
	case "cluster":
		// Timeouts that a machine loaded by the whole suite does not run
		// out of.
		cfg.Cluster.HeartbeatTimeout = 2 * time.Second
		var addrs []string
		for _, s := range dsstest.StartCluster(t, 3, cfg) {
			addrs = append(addrs, s.Addr())
		}
		return dsstest.NewBalancer(t, addrs).Addr()
	default:
		t.Fatalf("%s=%q: want single or cluster", targetEnv, target)
		return ""
	}
}

// targetEnv says what start starts.
const targetEnv = "DSS_CONFORMANCE_TARGET"

// raw is an MQTT 5 connection whose packets the test writes and reads
// itself.
type raw struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, addr string) *raw {
	t.Helper()
	conn, err := dsstest.DialMQTT(addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &raw{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// connect dials and sends CONNECT for id with the given clean start,
// keep alive and properties, and returns the CONNACK.
func connect(t *testing.T, addr, id string, clean bool, keepalive uint16, props packets.Properties) (*raw, packets.Packet) {
	t.Helper()
	c := dial(t, addr)
	c.send(packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Connect},
		Connect: packets.ConnectParams{
			ProtocolName:     []byte("MQTT"),
			ClientIdentifier: id,
			Clean:            clean,
			Keepalive:        keepalive,
		},
		Properties: props,
	})
	ack := c.recv()
	if ack.FixedHeader.Type != packets.Connack {
		t.Fatalf("%s: got packet type %d, want CONNACK", id, ack.FixedHeader.Type)
	}
	return c, ack
}

// connectOK is connect for a connection that must be accepted.
func connectOK(t *testing.T, addr, id string, clean bool, props packets.Properties) (*raw, packets.Packet) {
	t.Helper()
	c, ack := connect(t, addr, id, clean, 30, props)
	if ack.ReasonCode != 0 {
		t.Fatalf("%s: CONNACK %#x", id, ack.ReasonCode)
	}
	return c, ack
}

// send encodes pk as MQTT 5 and writes it.
func (c *raw) send(pk packets.Packet) {
	c.t.Helper()
	if _, err := c.conn.Write(encode(c.t, pk)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func encode(t *testing.T, pk packets.Packet) []byte {
	t.Helper()
	pk.ProtocolVersion = 5
	pk.Mods.AllowResponseInfo = true
	var buf bytes.Buffer
	var err error
	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = pk.ConnectEncode(&buf)
	case packets.Publish:
		err = pk.PublishEncode(&buf)
	case packets.Puback:
		err = pk.PubackEncode(&buf)
	case packets.Pubrec:
		err = pk.PubrecEncode(&buf)
	case packets.Pubrel:
		err = pk.PubrelEncode(&buf)
	case packets.Pubcomp:
		err = pk.PubcompEncode(&buf)
	case packets.Subscribe:
		err = pk.SubscribeEncode(&buf)
	case packets.Unsubscribe:
		err = pk.UnsubscribeEncode(&buf)
	case packets.Pingreq:
		err = pk.PingreqEncode(&buf)
	case packets.Disconnect:
		err = pk.DisconnectEncode(&buf)
	default:
		t.Fatalf("no encoder for packet type %d", pk.FixedHeader.Type)
	}
	if err != nil {
		t.Fatalf("encode type %d: %v", pk.FixedHeader.Type, err)
	}
	return buf.Bytes()
}

// errNoPacket is what next reports when nothing came in time.
var errNoPacket = errors.New("no packet")

// next reads the next packet within d: errNoPacket if none came, io.EOF
// or another error if the connection ended.
func (c *raw) next(d time.Duration) (packets.Packet, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(d))
	var pk packets.Packet
	b, err := c.r.ReadByte()
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return pk, errNoPacket
		}
		return pk, err
	}
	if err := pk.FixedHeader.Decode(b); err != nil {
		return pk, err
	}
	n, _, err := packets.DecodeLength(c.r)
	if err != nil {
		return pk, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return pk, err
	}
	pk.FixedHeader.Remaining = n
	pk.ProtocolVersion = 5
	switch pk.FixedHeader.Type {
	case packets.Connack:
		err = pk.ConnackDecode(body)
	case packets.Publish:
		err = pk.PublishDecode(body)
	case packets.Puback:
		err = pk.PubackDecode(body)
	case packets.Pubrec:
		err = pk.PubrecDecode(body)
	case packets.Pubrel:
		err = pk.PubrelDecode(body)
	case packets.Pubcomp:
		err = pk.PubcompDecode(body)
	case packets.Suback:
		err = pk.SubackDecode(body)
	case packets.Unsuback:
		err = pk.UnsubackDecode(body)
	case packets.Pingresp:
	case packets.Disconnect:
		err = pk.DisconnectDecode(body)
	default:
		err = fmt.Errorf("unexpected packet type %d", pk.FixedHeader.Type)
	}
	return pk, err
}

// recv returns the next packet, failing the test if none comes.
func (c *raw) recv() packets.Packet {
	c.t.Helper()
	pk, err := c.next(wait)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return pk
}

// recvType returns the next packet, which must be of type typ.
func (c *raw) recvType(typ byte) packets.Packet {
	c.t.Helper()
	pk := c.recv()
	if pk.FixedHeader.Type != typ {
		c.t.Fatalf("got packet type %d (reason %#x), want %d", pk.FixedHeader.Type, pk.ReasonCode, typ)
	}
	return pk
}

// nothing fails the test if a packet comes within quiet.
func (c *raw) nothing() {
	c.t.Helper()
	if pk, err := c.next(quiet); err == nil {
		c.t.Fatalf("unexpected packet type %d on %q", pk.FixedHeader.Type, pk.TopicName)
	} else if err != errNoPacket {
		c.t.Fatalf("connection ended: %v", err)
	}
}

// disconnected expects DISCONNECT with code, then the end of the stream
// (not a reset).
func (c *raw) disconnected(code byte) {
	c.t.Helper()
	pk := c.recvType(packets.Disconnect)
	if pk.ReasonCode != code {
		c.t.Fatalf("DISCONNECT %#x (%s), want %#x", pk.ReasonCode, pk.Properties.ReasonString, code)
	}
	c.closed()
}

// closed expects the end of the stream.
func (c *raw) closed() {
	c.t.Helper()
	for {
		pk, err := c.next(wait)
		switch {
		case err == io.EOF:
			return
		case err == nil:
			c.t.Logf("packet type %d after the end", pk.FixedHeader.Type)
			continue
		}
		c.t.Fatalf("want the end of the stream, got %v", err)
	}
}

// subscribe subscribes with subs (and the identifier id, if not 0) under
// packet id pid and returns the SUBACK's reason codes.
func (c *raw) subscribe(pid uint16, id int, subs ...packets.Subscription) []byte {
	c.t.Helper()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, PacketID: pid, Filters: subs}
	if id > 0 {
		pk.Properties.SubscriptionIdentifier = []int{id}
	}
	c.send(pk)
	ack := c.recvType(packets.Suback)
	if ack.PacketID != pid {
		c.t.Fatalf("SUBACK for packet id %d, want %d", ack.PacketID, pid)
	}
	return ack.ReasonCodes
}

// publish sends a PUBLISH; for QoS 1 it returns the PUBACK.
func (c *raw) publish(pk packets.Packet) packets.Packet {
	c.t.Helper()
	pk.FixedHeader.Type = packets.Publish
	c.send(pk)
	if pk.FixedHeader.Qos == 1 {
		return c.recvType(packets.Puback)
	}
	return packets.Packet{}
}

// ack acknowledges a QoS 1 delivery.
func (c *raw) ack(pk packets.Packet) {
	c.t.Helper()
	c.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pk.PacketID})
}

// ping sends PINGREQ and waits for PINGRESP: what the client sent before
// has been processed.
func (c *raw) ping() {
	c.t.Helper()
	c.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingreq}})
	c.recvType(packets.Pingresp)
}

// bye sends DISCONNECT 0x00 and waits for the server to close the
// connection: from then on the session has no connection.
func (c *raw) bye() {
	c.t.Helper()
	c.send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}})
	c.closed()
	_ = c.conn.Close()
}

func sub(filter string, qos byte) packets.Subscription {
	return packets.Subscription{Filter: filter, Qos: qos}
}

func msg(topic string, qos byte, payload string) packets.Packet {
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qos}, TopicName: topic, Payload: []byte(payload)}
	if qos > 0 {
		pk.PacketID = 1
	}
	return pk
}

// session is the properties of a CONNECT that keeps its session for an
// hour.
func session() packets.Properties {
	return packets.Properties{SessionExpiryInterval: 3600, SessionExpiryIntervalFlag: true}
}
