package server_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// dialConnected dials addr and connects as id with keep alive keepalive
// (0: none), reading the CONNACK; it returns the connection.
func dialConnected(t *testing.T, addr, id string, keepalive uint16) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, dsstest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	var buf bytes.Buffer
	pk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: 5,
		Connect:         packets.ConnectParams{ProtocolName: []byte("MQTT"), ClientIdentifier: id, Clean: true, Keepalive: keepalive},
	}
	if err := pk.ConnectEncode(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(dsstest.Timeout))
	r := bufio.NewReader(conn)
	if b, err := r.ReadByte(); err != nil || b>>4 != packets.Connack {
		t.Fatalf("%s: no CONNACK: %#x %v", id, b, err)
	}
	n, err := r.ReadByte()
	if err == nil {
		_, err = io.ReadFull(r, make([]byte, n))
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return conn
}

// publishHeader returns the start of a QoS 1 PUBLISH to topic whose
// remaining length says remaining bytes.
func publishHeader(topic string, remaining int) []byte {
	b := []byte{packets.Publish<<4 | 1<<1}
	for {
		d := byte(remaining % 128)
		remaining /= 128
		if remaining > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if remaining == 0 {
			break
		}
	}
	b = append(b, byte(len(topic)>>8), byte(len(topic)))
	return append(append(b, topic...), 0, 1, 0) // packet id 1, no properties
}

// awaitClosed fails the test unless the server closes conn within limit.
func awaitClosed(t *testing.T, conn net.Conn, what string, limit time.Duration) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the connection is still open after %v", what, limit)
	}
}

// TestAPacketThatStopsArrivingIsDropped: connections with keep alive 0
// that announce a PUBLISH of 60 MiB and send 1 MiB of it, or 20 bytes of
// 200, and then stall, are closed once --packet-read-timeout passes
// without a byte; one that keeps sending, however slowly, is not. A
// client beside them is served meanwhile. Such connections were held
// for good, each with the memory of what it had sent.
func TestAPacketThatStopsArrivingIsDropped(t *testing.T) {
	const timeout = time.Second
	s := dsstest.StartServer(t, server.Config{PacketReadTimeout: timeout, HTTPListen: "127.0.0.1:0"})
	var stalled []net.Conn
	for i, size := range []int{60 << 20, 200} {
		conn := dialConnected(t, s.Addr(), "stalled-"+string(rune('a'+i)), 0)
		head := publishHeader("t", size)
		sent := 20
		if size > 1<<20 {
			sent = 1 << 20
		}
		if _, err := conn.Write(append(head, make([]byte, sent)...)); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, conn)
	}

	// A client that keeps sending, a byte at a time, more slowly than the
	// timeout allows for the whole packet.
	trickler := dialConnected(t, s.Addr(), "slow", 0)
	payload := []byte("payload")
	packet := append(publishHeader("t", 6+len(payload)), payload...)
	start := time.Now()
	for i, b := range packet {
		if _, err := trickler.Write([]byte{b}); err != nil {
			t.Fatalf("trickler client, byte %d after %v: %v", i, time.Since(start), err)
		}
		time.Sleep(timeout / 5)
	}

	legit := dsstest.Dial(t, s.Addr(), "legit")
	began := time.Now()
	expect(t, "SET", legit.Set([]string{"k", "v"}), "+OK\r\n", "any")
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("the legitimate request took %v beside the stalled packets", took)
	}

	for i, conn := range stalled {
		awaitClosed(t, conn, "stalled connection "+string(rune('a'+i)), dsstest.Timeout)
	}
	if got := metricValue(t, s, "dss_mqtt_packets_stalled_total"); got != float64(len(stalled)) {
		t.Fatalf("dss_mqtt_packets_stalled_total %v, want %d", got, len(stalled))
	}
	_ = trickler.SetReadDeadline(time.Now().Add(dsstest.Timeout))
	ack := make([]byte, 4)
	if _, err := io.ReadFull(trickler, ack); err != nil || ack[0]>>4 != packets.Puback {
		t.Fatalf("the trickler client's publish, sent over %v: %x %v, want its PUBACK", time.Since(start), ack, err)
	}
}
