package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// rawConnect returns the encoding of an MQTT 5 CONNECT of client id.
func rawConnect(id string) []byte {
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: 5,
		Properties:      packets.Properties{SessionExpiryInterval: 0, ReceiveMaximum: 10, User: []packets.UserProperty{{Key: "k", Val: "v"}}},
		Connect:         packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 30, ClientIdentifier: id},
	}
	var b bytes.Buffer
	_ = pk.ConnectEncode(&b)
	return b.Bytes()
}

// rawSubscribe returns the encoding of an MQTT 5 SUBSCRIBE with a
// subscription identifier.
func rawSubscribe(filter string) []byte {
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
		ProtocolVersion: 5,
		PacketID:        7,
		Properties:      packets.Properties{SubscriptionIdentifier: []int{3}, User: []packets.UserProperty{{Key: "a", Val: "b"}}},
		Filters:         packets.Subscriptions{{Filter: filter, Qos: 1, NoLocal: true, RetainHandling: 1}},
	}
	var b bytes.Buffer
	_ = pk.SubscribeEncode(&b)
	return b.Bytes()
}

// rawRequest returns the encoding of a state store request with the
// properties of one.
func rawRequest(payload []byte) []byte {
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish, Qos: 1},
		ProtocolVersion: 5,
		TopicName:       wire.RequestTopic,
		PacketID:        9,
		Payload:         payload,
		Properties: packets.Properties{
			ResponseTopic: "fuzz/response", CorrelationData: []byte("corr"), ContentType: "application/octet-stream",
			PayloadFormat: 0, PayloadFormatFlag: true, MessageExpiryInterval: 60, TopicAlias: 1, TopicAliasFlag: true,
			User: []packets.UserProperty{{Key: wire.PropTimestamp, Val: dsstest.Now()}, {Key: wire.PropProtocolVersion, Val: "1.0"}},
		},
		Mods: packets.Mods{AllowResponseInfo: true},
	}
	var b bytes.Buffer
	_ = pk.PublishEncode(&b)
	return b.Bytes()
}

// readPacket reads one packet from r and returns its type and body.
func readPacket(r *bufio.Reader) (byte, []byte, error) {
	first, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, nil, err
	}
	body := make([]byte, n)
	_, err = io.ReadFull(r, body)
	return first >> 4, body, err
}

// rawClient connects over TCP with a valid CONNECT and reads its CONNACK.
func rawClient(t *testing.T, addr, id string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, dsstest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(dsstest.Timeout))
	if _, err := conn.Write(rawConnect(id)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	if typ, body, err := readPacket(r); err != nil || typ != packets.Connack || body[1] != 0 {
		t.Fatalf("CONNACK: type %d, body %v, %v", typ, body, err)
	}
	return conn, r
}

func TestAMalformedSubscribeClosesOnlyItsConnection(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0"})
	witness := dsstest.Dial(t, s.Addr(), "witness")
	expect(t, "SET", witness.Set([]string{"kept", "value"}, ts(dsstest.Now())), "+OK\r\n", "any")

	conn, r := rawClient(t, s.Addr(), "attacker")
	// Packet id, empty properties, filter "a", and no options byte.
	if _, err := conn.Write([]byte{packets.Subscribe<<4 | 2, 6, 0, 1, 0, 0, 1, 'a'}); err != nil {
		t.Fatal(err)
	}
	typ, body, err := readPacket(r)
	if err != nil || typ != packets.Disconnect || body[0] != 0x81 {
		t.Fatalf("want DISCONNECT 0x81, got type %d body %v err %v", typ, body, err)
	}
	if _, _, err := readPacket(r); err != io.EOF {
		t.Fatalf("after the DISCONNECT: %v, want EOF", err)
	}
	expect(t, "GET", witness.Request(dsstest.Cmd("GET", "kept")), "$5\r\nvalue\r\n", "any")
	if !metric(t, s, "dss_mqtt_packets_refused_total 1") {
		t.Fatal("dss_mqtt_packets_refused_total is not 1")
	}
	if !metric(t, s, "dss_mqtt_connection_panics_total 0") {
		t.Fatal("dss_mqtt_connection_panics_total is not 0")
	}
}

// FuzzPacketsThroughServer sends a CONNECT and the packets after it,
// both fuzzed, to a running server over TCP: malformed CONNECTs,
// SUBSCRIBEs and PUBLISHes with properties. Whatever arrives, the server
// must survive it and keep serving a well-behaved client.
func FuzzPacketsThroughServer(f *testing.F) {
	connect := rawConnect("fuzz")
	f.Add(connect, rawSubscribe("a/+/b"))
	f.Add(connect, []byte{packets.Subscribe<<4 | 2, 6, 0, 1, 0, 0, 1, 'a'})
	f.Add(connect, append(rawSubscribe("x"), rawRequest(dsstest.Cmd("SET", "k", "v"))...))
	f.Add(connect, rawRequest(dsstest.Cmd("GET", "k")))
	f.Add(connect, rawRequest(dsstest.Cmd("KEYNOTIFY", "k")))
	f.Add(connect[:len(connect)-3], []byte{})
	f.Add(append([]byte{}, connect[:12]...), []byte{0x40, 1, 2, 3})
	f.Add(connect, []byte{packets.Unsubscribe<<4 | 2, 5, 0, 2, 0, 0, 1})
	f.Add(connect, []byte{packets.Auth << 4, 2, 0x18, 0})
	f.Add(connect, []byte{packets.Disconnect << 4, 3, 0, 1, 17})

	s := dsstest.StartServer(f, server.Config{})
	witness := dsstest.Dial(f, s.Addr(), "witness-3f9c2e71d8a4")
	f.Fuzz(func(t *testing.T, connect, rest []byte) {
		conn, err := net.DialTimeout("tcp", s.Addr(), dsstest.Timeout)
		if err != nil {
			t.Fatalf("the server no longer accepts connections: %v", err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		_, _ = conn.Write(connect)
		_, _ = conn.Write(rest)
		// Read what comes back for a moment: the server answers, closes,
		// or waits for more.
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, _ = io.Copy(io.Discard, conn)
		conn.Close()

		// The client connected all along is still served, and so is a
		// new one.
		ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
		defer cancel()
		res, err := witness.Paho.Publish(ctx, &paho.Publish{QoS: 1, Topic: "witness/alive", Payload: []byte("x")})
		if err != nil || res.ReasonCode >= 0x80 {
			t.Fatalf("the witness's publish: %+v, %v", res, err)
		}
		fresh := dsstest.Dial(t, s.Addr(), "fresh-8e1b07c35a92")
		if p := fresh.Request(dsstest.Cmd("GET", "fuzz-witness")); string(p.Payload) != "$-1\r\n" {
			t.Fatalf("a new client's GET: %q", p.Payload)
		}
	})
}

// TestWriteServerFuzzSeedCorpus writes the seeds of
// FuzzPacketsThroughServer to testdata/fuzz when DSS_WRITE_CORPUS is set.
func TestWriteServerFuzzSeedCorpus(t *testing.T) {
	if os.Getenv("DSS_WRITE_CORPUS") == "" {
		t.Skip("set DSS_WRITE_CORPUS=1 to write the seed corpus")
	}
	connect := rawConnect("fuzz")
	seeds := map[string][2][]byte{
		"subscribe":               {connect, rawSubscribe("a/+/b")},
		"subscribe-no-options":    {connect, {packets.Subscribe<<4 | 2, 6, 0, 1, 0, 0, 1, 'a'}},
		"subscribe-flipped-props": {connect, {packets.Subscribe<<4 | 2, 7, 0, 1, 0x40, 0, 1, 'a', 1}},
		"request-set":             {connect, rawRequest(dsstest.Cmd("SET", "k", "v"))},
		"request-keynotify":       {connect, rawRequest(dsstest.Cmd("KEYNOTIFY", "k"))},
		"connect-truncated":       {connect[:len(connect)-3], nil},
		"connect-flipped-props":   {append(append([]byte{}, connect[:12]...), 0x40, 1, 2, 3), nil},
		"unsubscribe-truncated":   {connect, {packets.Unsubscribe<<4 | 2, 5, 0, 2, 0, 0, 1}},
		"disconnect-props":        {connect, {packets.Disconnect << 4, 3, 0, 1, 17}},
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzPacketsThroughServer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, seed := range seeds {
		file := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n[]byte(%s)\n", strconv.Quote(string(seed[0])), strconv.Quote(string(seed[1])))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
