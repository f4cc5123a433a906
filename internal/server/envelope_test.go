package server_test

import (
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

func TestResponseEnvelope(t *testing.T) {
	_, c := start(t)
	corr := []byte{0x00, 0xff, 0x10, '\r', '\n', 0x80, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a}
	if _, err := c.Publish(request(1, c.ResponseTopic, corr, dsstest.Cmd("SET", "k", "v"), ts(dsstest.Now()),
		paho.UserProperty{Key: wire.PropSourceID, Value: "me"}, paho.UserProperty{Key: "$partition", Value: "me"},
		paho.UserProperty{Key: "__invId", Value: "me"}, paho.UserProperty{Key: wire.PropProtocolVersion, Value: "1.0"})); err != nil {
		t.Fatal(err)
	}
	p := c.Next()
	if p.Topic != c.ResponseTopic {
		t.Fatalf("response on %q", p.Topic)
	}
	if string(p.Properties.CorrelationData) != string(corr) {
		t.Fatalf("correlation data %x, want %x", p.Properties.CorrelationData, corr)
	}
	if p.QoS != 1 {
		t.Fatalf("response QoS %d", p.QoS)
	}
	if p.Properties.ContentType != "application/octet-stream" {
		t.Fatalf("content type %q", p.Properties.ContentType)
	}
	for key, want := range map[string]string{wire.PropStatus: "200", wire.PropProtocolVersion: "1.0"} {
		if got, _ := dsstest.UserProperty(p, key); got != want {
			t.Fatalf("%s = %q, want %q", key, got, want)
		}
	}
	expect(t, "SET", p, "+OK\r\n", "any")
}

func TestUnsupportedProtocolVersion(t *testing.T) {
	_, c := start(t)
	p := c.Request(dsstest.Cmd("SET", "k", "v"), ts(dsstest.Now()), paho.UserProperty{Key: wire.PropProtocolVersion, Value: "2.0"})
	for key, want := range map[string]string{
		wire.PropStatus:          "505",
		wire.PropSupportedMajor:  "1",
		wire.PropRequestProtocol: "2.0",
		wire.PropProtocolVersion: "1.0",
	} {
		if got, _ := dsstest.UserProperty(p, key); got != want {
			t.Fatalf("%s = %q, want %q", key, got, want)
		}
	}
	if _, ok := dsstest.UserProperty(p, wire.PropTimestamp); ok {
		t.Fatal("505 response carries __ts")
	}
	expect(t, "not executed", c.Request(dsstest.Cmd("GET", "k")), "$-1\r\n", "")
	// A minor version of major 1 is fine.
	expect(t, "1.7", c.Request(dsstest.Cmd("GET", "k"), paho.UserProperty{Key: wire.PropProtocolVersion, Value: "1.7"}), "$-1\r\n", "")
}

func TestTimestampOnlyWhenAVersionExists(t *testing.T) {
	_, c := start(t)
	v := expect(t, "SET", c.Set([]string{"k", "v"}), "+OK\r\n", "any")
	expect(t, "GET hit", c.Request(dsstest.Cmd("GET", "k")), "$1\r\nv\r\n", v.String())
	expect(t, "GET miss", c.Request(dsstest.Cmd("GET", "nope")), "$-1\r\n", "")
	expect(t, "DEL miss", c.Request(dsstest.Cmd("DEL", "nope")), ":0\r\n", "")
	expect(t, "VDEL miss", c.Request(dsstest.Cmd("VDEL", "nope", "v")), ":0\r\n", "")
	expect(t, "SET NX not met", c.Set([]string{"k", "w", "NX"}), ":-1\r\n", v.String())
	expect(t, "error", c.Request(dsstest.Cmd("GET")), errPayload(wire.ErrWrongArgs), "")
	expect(t, "KEYNOTIFY", c.Request(dsstest.Cmd("KEYNOTIFY", "k")), "+OK\r\n", "")
}
