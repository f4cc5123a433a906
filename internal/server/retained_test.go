package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// TestRetainedMessagesAreBounded: past --max-retained-messages or
// --max-retained-bytes a message to retain is refused with PUBACK 0x97
// (a QoS 0 one is dropped), neither retained nor routed, and counted;
// replacing and deleting retained messages always work.
func TestRetainedMessagesAreBounded(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{MaxRetained: 5, MaxRetainedBytes: 64 << 10, HTTPListen: "127.0.0.1:0"})
	pub := dsstest.DialNoSubscribe(t, s.Addr(), "pub")
	sub := dsstest.DialNoSubscribe(t, s.Addr(), "sub")
	sub.Subscribe("r/#")
	retain := func(topic string, qos byte, payload []byte) byte {
		t.Helper()
		if qos == 0 {
			if _, err := pub.Publish(&paho.Publish{Topic: topic, QoS: 0, Retain: true, Payload: payload}); err != nil {
				t.Fatal(err)
			}
			return 0
		}
		return pub.PublishCode(&paho.Publish{Topic: topic, QoS: qos, Retain: true, Payload: payload})
	}
	for i := range 5 {
		if code := retain(fmt.Sprintf("r/%d", i), 1, []byte("v")); code != 0 {
			t.Fatalf("retained message %d: PUBACK %#x", i, code)
		}
		sub.Next()
	}
	for _, c := range []struct {
		what    string
		topic   string
		qos     byte
		payload []byte
		want    byte
	}{
		{"a sixth topic", "r/5", 1, []byte("v"), 0x97},
		{"a sixth topic with QoS 2", "r/5", 2, []byte("v"), 0x97},
		{"a replacement", "r/0", 1, []byte("w"), 0},
		{"a replacement past the bytes", "r/0", 1, bytes.Repeat([]byte("x"), 64<<10), 0x97},
		{"a deletion", "r/1", 1, nil, 0},
		{"a new topic in its place", "r/5", 1, []byte("v"), 0},
	} {
		if code := retain(c.topic, c.qos, c.payload); code != c.want {
			t.Fatalf("%s: PUBACK %#x, want %#x", c.what, code, c.want)
		}
		if c.want == 0 {
			if p := sub.Next(); p.Topic != c.topic {
				t.Fatalf("%s: %s routed, want %s", c.what, p.Topic, c.topic)
			}
		}
	}
	retain("r/6", 0, []byte("v")) // dropped
	retain("r/0", 0, []byte("z")) // a replacement: taken
	if p := sub.Next(); p.Topic != "r/0" || string(p.Payload) != "z" {
		t.Fatalf("after a QoS 0 message past the bound, %s %q came, want the replacement of r/0", p.Topic, p.Payload)
	}
	for series, want := range map[string]float64{
		"dss_mqtt_retained_refused_total": 4,
		"dss_mqtt_retained_messages":      5,
	} {
		if got := metricValue(t, s, series); got != want {
			t.Errorf("%s %v, want %v", series, got, want)
		}
	}
}

// rawSubscriber connects id, subscribes it to filter with QoS 1, and
// never reads what it is sent.
func rawSubscriber(t *testing.T, addr, id, filter string) net.Conn {
	t.Helper()
	conn := dialConnected(t, addr, id, 0)
	var buf bytes.Buffer
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, ProtocolVersion: 5, PacketID: 1,
		Filters: packets.Subscriptions{{Filter: filter, Qos: 1}}}
	if err := pk.SubscribeEncode(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestANewSubscriberToEverythingGetsEveryRetainedMessage: with 12,000
// retained messages, more than a client's queues hold, three
// subscribers to # that never read hold the server up in nothing, and a
// subscriber to # that reads, slowly at first, gets every one of them,
// while a client beside them is served. The retained messages were all
// queued at once: past 8,192 they were lost, and the subscriber waited
// for all of them to be copied before the first was sent.
func TestANewSubscriberToEverythingGetsEveryRetainedMessage(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	const n = 12_000
	pub := dsstest.DialNoSubscribe(t, s.Addr(), "pub")
	payload := bytes.Repeat([]byte("p"), 1024) // 12 MB: more than the sockets hold
	for i := range n {
		if _, err := pub.Publish(&paho.Publish{Topic: fmt.Sprintf("plant/%d/state", i), QoS: 1, Retain: true, Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}

	for i := range 3 {
		rawSubscriber(t, s.Addr(), fmt.Sprintf("idle-%d", i), "#")
	}

	// The reader reads nothing for a second after it subscribed, as a
	// client busy at start does: what the server sends meanwhile waits.
	reader := rawSubscriber(t, s.Addr(), "reader", "#")
	got := map[string]bool{}
	all := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		r := bufio.NewReader(reader)
		for len(got) < n {
			pk, err := readPacketFrom(r)
			if err != nil {
				all <- fmt.Errorf("after %d retained messages: %w", len(got), err)
				return
			}
			if pk.FixedHeader.Type != packets.Publish {
				continue
			}
			if pk.FixedHeader.Qos > 0 {
				var buf bytes.Buffer
				ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, ProtocolVersion: 5, PacketID: pk.PacketID}
				_ = ack.PubackEncode(&buf)
				if _, err := reader.Write(buf.Bytes()); err != nil {
					all <- err
					return
				}
			}
			if strings.HasPrefix(pk.TopicName, "plant/") {
				got[pk.TopicName] = true
			}
		}
		all <- nil
	}()

	legit := dsstest.Dial(t, s.Addr(), "legit")
	start := time.Now()
	legit.Subscribe("news")
	expect(t, "SET", legit.Set([]string{"k", "v"}), "+OK\r\n", "any")
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a subscription and a request took %v beside the subscribers to #", took)
	}

	select {
	case err := <-all:
		if err != nil {
			t.Fatalf("the subscriber to # did not get the %d retained messages: %v", n, err)
		}
	case <-time.After(60 * time.Second):
		_ = reader.Close() // ends the reading goroutine
		<-all
		t.Fatalf("the subscriber to # got %d of the %d retained messages", len(got), n)
	}
}

// readPacketFrom reads an MQTT 5 packet from r, decoding a PUBLISH.
func readPacketFrom(r *bufio.Reader) (packets.Packet, error) {
	var pk packets.Packet
	b, err := r.ReadByte()
	if err != nil {
		return pk, err
	}
	if err := pk.FixedHeader.Decode(b); err != nil {
		return pk, err
	}
	n, _, err := packets.DecodeLength(r)
	if err != nil {
		return pk, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return pk, err
	}
	pk.ProtocolVersion = 5
	if pk.FixedHeader.Type == packets.Publish {
		err = pk.PublishDecode(body)
	}
	return pk, err
}

// TestARetainedMessagePublishedAfterTheSubscribeComesOnce publishes a
// message to retain right after a subscription's SUBACK: it reaches the
// subscriber as it is published, and is not sent again among the
// retained messages of the subscription.
func TestARetainedMessagePublishedAfterTheSubscribeComesOnce(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	pub := dsstest.DialNoSubscribe(t, s.Addr(), "pub")
	for i := range 30 {
		sub := dsstest.DialNoSubscribe(t, s.Addr(), fmt.Sprint("sub-", i))
		sub.Subscribe(fmt.Sprintf("once/%d/#", i))
		topic := fmt.Sprintf("once/%d/t", i)
		if code := pub.PublishCode(&paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: []byte("v")}); code != 0 {
			t.Fatalf("PUBACK %#x", code)
		}
		if p := sub.Next(); p.Topic != topic {
			t.Fatalf("round %d: %s, want %s", i, p.Topic, topic)
		}
		sub.NoMessage(30 * time.Millisecond)
	}
}
