package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/packets"

	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// TestTemplateDecodesWithPaho checks the hand-made request encoding against
// an independent MQTT codec.
func TestTemplateDecodesWithPaho(t *testing.T) {
	ks := newKeySpace("k:", 1000)
	value := makeValue(300) // a length that needs a two-byte VBI
	tests := []struct {
		verb verb
		args requestArgs
		want [][]byte
	}{
		{opSet, requestArgs{value: value}, [][]byte{[]byte("SET"), []byte("k:042"), value}},
		{opSet, requestArgs{value: []byte("v"), px: 1500}, [][]byte{[]byte("SET"), []byte("k:042"), []byte("v"), []byte("PX"), []byte("1500")}},
		{opGet, requestArgs{}, [][]byte{[]byte("GET"), []byte("k:042")}},
		{opDel, requestArgs{}, [][]byte{[]byte("DEL"), []byte("k:042")}},
		{opVDel, requestArgs{value: []byte("v")}, [][]byte{[]byte("VDEL"), []byte("k:042"), []byte("v")}},
		{opKeyNotify, requestArgs{}, [][]byte{[]byte("KEYNOTIFY"), []byte("k:042")}},
		{opKeyNotify, requestArgs{pattern: true}, [][]byte{[]byte("KEYNOTIFY"), []byte("k:042"), []byte("PATTERN")}},
	}
	for _, tt := range tests {
		tpl := newTemplate(tt.verb, ks, tt.args, "resp/topic")
		ts := appendTimestamp(nil, 1700000000123)
		b := tpl.appendRequest([]byte("junk"), 513, 0xABCD<<48|7, ts, 42)[4:]
		cp, err := packets.ReadPacket(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: paho cannot read the request: %v", tt.verb, err)
		}
		p := cp.Content.(*packets.Publish)
		if p.Topic != wire.RequestTopic || p.QoS != 1 || p.PacketID != 513 {
			t.Errorf("%s: topic %q qos %d id %d", tt.verb, p.Topic, p.QoS, p.PacketID)
		}
		if p.Properties.ResponseTopic != "resp/topic" {
			t.Errorf("%s: response topic %q", tt.verb, p.Properties.ResponseTopic)
		}
		if got := binary.BigEndian.Uint64(p.Properties.CorrelationData); got != 0xABCD<<48|7 {
			t.Errorf("%s: correlation %x", tt.verb, got)
		}
		user := map[string]string{}
		for _, u := range p.Properties.User {
			user[u.Key] = u.Value
		}
		if user["__ts"] != "001700000000123:00000:bench" || user["__protVer"] != "1.0" {
			t.Errorf("%s: user properties %v", tt.verb, user)
		}
		if want := resp.AppendArray(nil, tt.want...); !bytes.Equal(p.Payload, want) {
			t.Errorf("%s: payload %q, want %q", tt.verb, p.Payload, want)
		}
		if req, _, perr := wire.ParseRequest(p.Payload, nil); perr != nil || string(req.Key) != "k:042" {
			t.Errorf("%s: the server's parser says %v, key %q", tt.verb, perr, req.Key)
		}
		if tpl.valOff >= 0 && !bytes.HasPrefix(b[tpl.valOff:], tt.args.value) {
			t.Errorf("%s: value offset %d does not point at the value", tt.verb, tpl.valOff)
		}
	}
}

// TestParsePublishReadsPahoEncoding decodes publishes that paho encoded,
// with properties of every type before and after the ones the generator
// reads.
func TestParsePublishReadsPahoEncoding(t *testing.T) {
	expiry, subID, format := uint32(60), 7, byte(1)
	for _, qos := range []byte{0, 1} {
		in := &packets.Publish{
			Topic:    "clients/x/response",
			QoS:      qos,
			PacketID: 9,
			Payload:  []byte("$3\r\nabc\r\n"),
			Properties: &packets.Properties{
				PayloadFormat:          &format,
				MessageExpiry:          &expiry,
				ContentType:            wire.ContentType,
				CorrelationData:        []byte{1, 2, 3, 4, 5, 6, 7, 8},
				SubscriptionIdentifier: &subID,
				User: []packets.User{
					{Key: "__stat", Value: "200"},
					{Key: "other", Value: "x"},
					{Key: "__ts", Value: "001700000000123:00001:node"},
					{Key: "__protVer", Value: "1.0"},
				},
			},
		}
		var buf bytes.Buffer
		if _, err := in.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		first, body, n, err := splitPacket(buf.Bytes())
		if err != nil || n != buf.Len() {
			t.Fatalf("splitPacket: %v, %d of %d bytes", err, n, buf.Len())
		}
		var p publish
		if err := parsePublish(first, body, &p); err != nil {
			t.Fatalf("parsePublish: %v", err)
		}
		if string(p.topic) != in.Topic || p.qos != qos || (qos == 1 && p.packetID != 9) ||
			string(p.payload) != string(in.Payload) || !bytes.Equal(p.correlation, in.Properties.CorrelationData) ||
			string(p.stat) != "200" || string(p.ts) != "001700000000123:00001:node" || !p.hasStat || !p.hasTS {
			t.Fatalf("qos %d: decoded %+v", qos, p)
		}
	}
}

func TestSplitPacketNeedsTheWholePacket(t *testing.T) {
	pkt := newTemplate(opSet, newKeySpace("k", 10), requestArgs{value: makeValue(200)}, "r").pkt
	for i := 0; i < len(pkt); i++ {
		if _, _, _, err := splitPacket(pkt[:i]); !errors.Is(err, errIncomplete) {
			t.Fatalf("%d of %d bytes: %v, want errIncomplete", i, len(pkt), err)
		}
	}
	if n, ok := packetLen(pkt[:3]); !ok || n != len(pkt) {
		t.Fatalf("packetLen = %d, %v; want %d", n, ok, len(pkt))
	}
	if _, _, _, err := splitPacket([]byte{0x30, 0xff, 0xff, 0xff, 0xff, 0x01}); !errors.Is(err, errMalformed) {
		t.Fatalf("a five-byte length: %v", err)
	}
}

func TestParseAck(t *testing.T) {
	id, reason, err := parseAck([]byte{1, 2})
	if err != nil || id != 258 || reason != 0 {
		t.Fatalf("short PUBACK: %d %d %v", id, reason, err)
	}
	id, reason, err = parseAck([]byte{0, 5, 0x83, 0})
	if err != nil || id != 5 || reason != 0x83 {
		t.Fatalf("PUBACK with reason: %d %d %v", id, reason, err)
	}
}

func TestKeySpaceIsFixedWidth(t *testing.T) {
	ks := newKeySpace("p", 10000)
	if got := string(ks.key(7)); got != "p0007" {
		t.Fatalf("key(7) = %q", got)
	}
	if got := string(newKeySpace("p", 1).key(0)); got != "p0" {
		t.Fatalf("one key: %q", got)
	}
	ks.suffix = "/k"
	if got := string(ks.key(42)); got != "p0042/k" {
		t.Fatalf("key(42) with a suffix = %q", got)
	}
	tpl := newTemplate(opSet, ks, requestArgs{value: []byte("v")}, "r")
	b := tpl.appendRequest(nil, 1, 1, appendTimestamp(nil, 1), 9876)
	if !bytes.Contains(b, []byte("$7\r\np9876/k\r\n$1\r\nv\r\n")) {
		t.Fatalf("the template patches the digits before the suffix: %q", b)
	}
}

// TestWatchPatterns checks the registrations of a watch run: each
// watcher's pattern matches its own key and no other watcher's, whatever
// wildcards the key prefix holds.
func TestWatchPatterns(t *testing.T) {
	for _, prefix := range []string{"bench:", "a*b?c[d]e/", "[!x]-", "é/"} {
		cfg := &Config{KeyPrefix: prefix, Watchers: 120, Workload: Workload{Mode: ModeWatch, Pattern: true}}
		keys, regs := watchKeys(cfg)
		for i := range keys.n {
			for j := range keys.n {
				if got := wire.MatchPattern(regs.key(i), keys.key(j)); got != (i == j) {
					t.Fatalf("prefix %q: pattern %q matches key %q: %v", prefix, regs.key(i), keys.key(j), got)
				}
			}
		}
		if p := string(regs.key(7)); wire.PatternPrefix(p) != string(keys.key(7)[:len(keys.key(7))-1]) && !strings.ContainsAny(prefix, "*?[") {
			t.Fatalf("prefix %q: pattern %q has the literal start %q", prefix, p, wire.PatternPrefix(p))
		}
	}
}
