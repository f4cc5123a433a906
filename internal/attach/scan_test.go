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

// A notification larger than the broker takes (its topic holds the key
// twice, so it can outgrow the SET that caused it) is dropped and
// counted: sent, it would end dss's connection, and its session would
// send it again on every new one.
func TestMessagesTooLargeForTheBrokerAreDropped(t *testing.T) {
	const maxPacket = 20000
	m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{Lines: []string{fmt.Sprintf("max_packet_size %d", maxPacket)}})
	_, web := startWithHTTP(t, m, server.Config{})
	w := dsstest.Dial(t, m.Addr, "watcher")
	w.Subscribe(wire.NotifyTopicFilter(w.ID))
	big := strings.Repeat("k", 3000)
	for _, k := range []string{big, "small"} {
		if p := w.Request(dsstest.Cmd("KEYNOTIFY", k)); string(p.Payload) != "+OK\r\n" {
			t.Fatalf("KEYNOTIFY: %q", p.Payload)
		}
	}
	c := dsstest.Dial(t, m.Addr, "writer")
	// The request fits; its notification, with the key twice in hex in
	// its topic, does not.
	if p := c.Set([]string{big, strings.Repeat("v", 16000)}); string(p.Payload) != "+OK\r\n" {
		t.Fatalf("SET: %q", p.Payload)
	}
	c.Set([]string{"small", "v"})
	if n := w.Next(); !strings.HasSuffix(n.Topic, "/command/notify/736D616C6C") {
		t.Fatalf("the first notification is on %s, not small's", n.Topic)
	}
	if n := metric(t, web, `dss_attach_dropped_messages_total{reason="too_large"}`); n != 1 {
		t.Fatalf("%v messages dropped as too large, want 1", n)
	}
	if n := metric(t, web, "dss_attach_connection_losses_total"); n != 0 {
		t.Fatalf("dss lost its connection to the broker %v times", n)
	}
}
