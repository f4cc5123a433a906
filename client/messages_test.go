package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// A request over the server's maximum packet size is refused before it
// is sent, with the sizes; a connection lost would say that a write may
// have been applied. The connection stays up.
func TestRequestOverTheMaximumPacketSize(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{MaxPacketSize: 64 << 10})
	c := dial(t, s.Addr())
	_, err := c.Set(ctxT(t), "big", make([]byte, 64<<10))
	var tl *PacketTooLargeError
	if !errors.As(err, &tl) || tl.Max != 64<<10 || tl.Size <= 64<<10 || errors.Is(err, ErrConnectionLost) {
		t.Fatalf("Set of a value over the limit: %v", err)
	}
	if !strings.Contains(err.Error(), "maximum packet size of 65536 bytes") {
		t.Fatalf("message: %v", err)
	}
	if _, err := c.Set(ctxT(t), "small", make([]byte, 60<<10)); err != nil {
		t.Fatalf("Set under the limit after the refusal: %v", err)
	}
}

// publishSize counts the bytes a PUBLISH takes on the wire.
func TestPublishSize(t *testing.T) {
	for _, n := range []int{0, 10, 100, 127, 200, 16000, 20000, 3 << 20} {
		p := &paho.Publish{QoS: 1, Topic: "t/x", PacketID: 7, Payload: make([]byte, n), Properties: &paho.PublishProperties{CorrelationData: []byte("c")}}
		var b strings.Builder
		if _, err := p.Packet().WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		if got := publishSize(p); got != b.Len() {
			t.Errorf("payload %d: publishSize %d, encoded %d", n, got, b.Len())
		}
	}
}

// A TLS listener dialled without TLS, and a plain one dialled with it,
// say what is wrong instead of EOF.
func TestTLSMismatchIsExplained(t *testing.T) {
	ca := dsstest.NewCA(t, "ca")
	cert := ca.Server("localhost")
	s := dsstest.StartServer(t, server.Config{TLSCert: cert.CertFile, TLSKey: cert.KeyFile, TLSListen: "127.0.0.1:0"})
	cfg := testConfig(s.TLSAddr())
	cfg.DialRounds = 1
	_, err := Dial(ctxT(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "speaks TLS on this port") {
		t.Fatalf("plain to the TLS listener: %v", err)
	}
	cfg = testConfig(s.Addr())
	cfg.DialRounds = 1
	cfg.TLS = ca.ClientTLS()
	_, err = Dial(ctxT(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "is it a plain MQTT listener?") {
		t.Fatalf("TLS to the plain listener: %v", err)
	}
}
