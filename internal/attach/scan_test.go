package attach_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// A SCAN page fits the largest packet the broker takes from dss (the
// Maximum Packet Size of its CONNACK): Mosquitto would refuse a larger
// response and end dss's connection.
func TestScanPagesFitTheBrokersPacketSize(t *testing.T) {
	const maxPacket = 20000
	m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{Lines: []string{fmt.Sprintf("max_packet_size %d", maxPacket)}})
	_, web := startWithHTTP(t, m, server.Config{})
	c := dsstest.Dial(t, m.Addr, "scanner")
	// 400 keys of 100 bytes: 40 kB, one page for the engine's own bound.
	want := map[string]bool{}
	var waits []chan *paho.Publish
	for i := range 400 {
		k := fmt.Sprintf("k/%03d/%s", i, strings.Repeat("x", 94))
		want[k] = true
		waits = append(waits, c.Send(dsstest.Cmd("SET", k, "v"), paho.UserProperty{Key: wire.PropTimestamp, Value: dsstest.Now()}))
	}
	for _, w := range waits {
		if p := c.Await(w); string(p.Payload) != "+OK\r\n" {
			t.Fatalf("SET: %q", p.Payload)
		}
	}
	var token []byte
	pages := 0
	for {
		args := [][]byte{[]byte("SCAN"), []byte("k/*")}
		if token != nil {
			args = append(args, token)
		}
		p := c.Request(resp.AppendArray(nil, args...))
		if len(p.Payload) > maxPacket {
			t.Fatalf("a page of %d bytes through a broker that takes %d", len(p.Payload), maxPacket)
		}
		keys, tok, more, err := resp.ParseScanPage(p.Payload)
		if err != nil {
			t.Fatalf("SCAN: %.60q: %v", p.Payload, err)
		}
		pages++
		for _, k := range keys {
			if !want[string(k)] {
				t.Fatalf("SCAN listed %q twice or unasked", k)
			}
			delete(want, string(k))
		}
		if !more {
			break
		}
		token = append([]byte{}, tok...)
	}
	if len(want) != 0 || pages < 2 {
		t.Fatalf("%d keys not listed, in %d pages", len(want), pages)
	}
	if n := metric(t, web, "dss_attach_connection_losses_total"); n != 0 {
		t.Fatalf("dss lost its connection to the broker %v times", n)
	}
}
