package dsstest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/wire"
)

// Pipe is an MQTT 5 connection that writes several requests in one write,
// so that the server receives them back to back in a known order, which a
// client library that sends from many goroutines cannot promise. It is
// used by one goroutine.
type Pipe struct {
	t             testing.TB
	ID            string
	ResponseTopic string
	conn          net.Conn
	r             *bufio.Reader
	nextID        uint16
}

// PipeRequest is one request of a batch.
type PipeRequest struct {
	Payload     []byte
	Correlation []byte
	User        []packets.User
}

// DialPipe connects as id and subscribes to its response topic.
func DialPipe(t testing.TB, addr, id string) *Pipe {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, Timeout)
	if err != nil {
		t.Fatalf("pipe %s: dial: %v", id, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	p := &Pipe{t: t, ID: id, ResponseTopic: "pipe/" + id + "/response", conn: conn, r: bufio.NewReader(conn)}
	recvMax := uint16(65535)
	p.write(&packets.Connect{
		ProtocolName: "MQTT", ProtocolVersion: 5, ClientID: id, CleanStart: true,
		Properties: &packets.Properties{ReceiveMaximum: &recvMax},
	})
	if ca, ok := p.read().Content.(*packets.Connack); !ok || ca.ReasonCode != 0 {
		t.Fatalf("pipe %s: no CONNACK 0", id)
	}
	p.write(&packets.Subscribe{PacketID: 1, Properties: &packets.Properties{},
		Subscriptions: []packets.SubOptions{{Topic: p.ResponseTopic, QoS: 1}}})
	if _, ok := p.read().Content.(*packets.Suback); !ok {
		t.Fatalf("pipe %s: no SUBACK", id)
	}
	p.nextID = 1
	return p
}

// write sends one packet.
func (p *Pipe) write(pk interface {
	WriteTo(io.Writer) (int64, error)
}) {
	p.t.Helper()
	_ = p.conn.SetWriteDeadline(time.Now().Add(Timeout))
	if _, err := pk.WriteTo(p.conn); err != nil {
		p.t.Fatalf("pipe %s: write: %v", p.ID, err)
	}
}

// read returns the next packet.
func (p *Pipe) read() *packets.ControlPacket {
	p.t.Helper()
	_ = p.conn.SetReadDeadline(time.Now().Add(Timeout))
	cp, err := packets.ReadPacket(p.r)
	if err != nil {
		p.t.Fatalf("pipe %s: read: %v", p.ID, err)
	}
	return cp
}

// Write sends the requests as QoS 1 PUBLISH packets in one write, in
// order.
func (p *Pipe) Write(reqs ...PipeRequest) {
	p.t.Helper()
	var buf bytes.Buffer
	for _, r := range reqs {
		p.nextID++
		if p.nextID == 0 {
			p.nextID = 1
		}
		pub := &packets.Publish{
			QoS: 1, PacketID: p.nextID, Topic: wire.RequestTopic, Payload: r.Payload,
			Properties: &packets.Properties{ResponseTopic: p.ResponseTopic, CorrelationData: r.Correlation, User: r.User},
		}
		if _, err := pub.WriteTo(&buf); err != nil {
			p.t.Fatalf("pipe %s: encode: %v", p.ID, err)
		}
	}
	_ = p.conn.SetWriteDeadline(time.Now().Add(Timeout))
	if _, err := p.conn.Write(buf.Bytes()); err != nil {
		p.t.Fatalf("pipe %s: write: %v", p.ID, err)
	}
}

// Responses reads until n responses have come and returns them by
// correlation data, acknowledging each; PUBACKs of the requests are
// skipped.
func (p *Pipe) Responses(n int) map[string]*packets.Publish {
	p.t.Helper()
	got := make(map[string]*packets.Publish, n)
	for len(got) < n {
		cp := p.read()
		pub, ok := cp.Content.(*packets.Publish)
		if !ok {
			if ack, ok := cp.Content.(*packets.Puback); ok && ack.ReasonCode >= 0x80 {
				p.t.Fatalf("pipe %s: request %d acknowledged with %#x", p.ID, ack.PacketID, ack.ReasonCode)
			}
			continue
		}
		if pub.QoS > 0 {
			p.write(&packets.Puback{PacketID: pub.PacketID, Properties: &packets.Properties{}})
		}
		if pub.Topic != p.ResponseTopic {
			continue
		}
		key := string(pub.Properties.CorrelationData)
		if _, dup := got[key]; dup {
			p.t.Fatalf("pipe %s: two responses for correlation %q", p.ID, key)
		}
		got[key] = pub
	}
	return got
}

// Property returns the value of the user property key of a response.
func Property(pub *packets.Publish, key string) (string, bool) {
	for _, u := range pub.Properties.User {
		if u.Key == key {
			return u.Value, true
		}
	}
	return "", false
}

// Correlation returns distinct correlation data for the i-th request of
// a test.
func Correlation(i int) []byte { return []byte(fmt.Sprintf("corr-%06d", i)) }

// Request sends one request and returns its response.
func (p *Pipe) Request(r PipeRequest) *packets.Publish {
	p.t.Helper()
	p.Write(r)
	return p.Responses(1)[string(r.Correlation)]
}
