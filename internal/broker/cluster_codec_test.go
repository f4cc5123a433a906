package broker

import (
	"bytes"
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
)

func sampleMessage() packets.Packet {
	return packets.Packet{
		FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 2, Retain: true},
		TopicName:   "a/b", Origin: "pub", Payload: []byte("payload"),
		Properties: packets.Properties{
			PayloadFormat: 1, PayloadFormatFlag: true, ContentType: "text/plain", ResponseTopic: "r/t",
			CorrelationData: []byte{0, 1}, User: []packets.UserProperty{{Key: "a", Val: "1"}, {Key: "a", Val: "2"}},
		},
	}
}

// A message crosses the encoding with everything a subscriber sees.
func TestMessageEncodingRoundTrip(t *testing.T) {
	pk := sampleMessage()
	var got packets.Packet
	expires, err := decodeMessage(appendMessage(nil, &pk, 42), &got)
	if err != nil || expires != 42 {
		t.Fatalf("decode: %v, expires %d", err, expires)
	}
	if got.TopicName != pk.TopicName || got.Origin != pk.Origin || !bytes.Equal(got.Payload, pk.Payload) ||
		got.FixedHeader.Qos != 2 || !got.FixedHeader.Retain || got.Properties.PayloadFormat != 1 || !got.Properties.PayloadFormatFlag ||
		got.Properties.ContentType != "text/plain" || got.Properties.ResponseTopic != "r/t" ||
		!bytes.Equal(got.Properties.CorrelationData, []byte{0, 1}) || len(got.Properties.User) != 2 || got.Properties.User[1].Val != "2" {
		t.Fatalf("decoded %+v", got)
	}
	subs := []packets.Subscription{{Filter: "x/#", Qos: 1, NoLocal: true, RetainAsPublished: true, RetainHandling: 2, Identifier: 7}}
	queued := pk
	queued.PacketID, queued.Queued = 9, true
	rel := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrel, Qos: 1}, PacketID: 3}
	s, in, err := parseSession(appendSession(nil, subs, []packets.Packet{queued, rel, {FixedHeader: packets.FixedHeader{Type: packets.Puback}}}))
	if err != nil || len(s) != 1 || s[0].Filter != "x/#" || s[0].Qos != 1 || !s[0].NoLocal || !s[0].RetainAsPublished || s[0].RetainHandling != 2 || s[0].Identifier != 7 || len(in) != 2 || in[0].PacketID != 9 || !in[0].Queued || in[1].FixedHeader.Type != packets.Pubrel {
		t.Fatalf("session: %v %+v %+v", err, s, in)
	}
}

// The decoders refuse what they cannot read and never panic on it.
func FuzzDecodeMessage(f *testing.F) {
	pk := sampleMessage()
	f.Add(appendMessage(nil, &pk, 0))
	f.Add(appendSession(nil, []packets.Subscription{{Filter: "a", Qos: 1}}, []packets.Packet{pk}))
	f.Add([]byte{messageVersion, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p packets.Packet
		if _, err := decodeMessage(b, &p); err == nil {
			again := appendMessage(nil, &p, 0)
			var q packets.Packet
			if _, err := decodeMessage(again, &q); err != nil || q.TopicName != p.TopicName || !bytes.Equal(q.Payload, p.Payload) {
				t.Fatalf("a decoded message does not encode back: %v", err)
			}
		}
		_, _, _ = parseSession(b)
		_, _ = parseSubscriptions(b)
	})
}
