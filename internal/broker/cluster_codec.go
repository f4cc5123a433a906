package broker

import (
	"encoding/binary"
	"errors"
	"github.com/dssio/dss/internal/bincode"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// The encodings of what the broker hands the other nodes of a cluster: a
// message (relayed, or kept as a retained message in the replicated
// state), and a session (subscriptions and messages in flight) that moves
// to another node. They carry what a subscriber sees of a PUBLISH, and
// nothing a receiving node decides itself (packet ids, subscription
// identifiers, topic aliases).

// messageVersion starts every encoded message; a node that reads another
// version refuses it.
const messageVersion = 1

var errBadMessage = errors.New("broker: malformed message from another node")

const (
	msgRetain        = 1 << 0
	msgPayloadFormat = 1 << 1 // the Payload Format Indicator is present
	msgQoSShift      = 2
)

// appendMessage encodes the message pk: its topic, payload, QoS, retain
// flag, publisher (for no-local), the MQTT 5 properties of a PUBLISH that
// travel with it (payload format, content type, response topic,
// correlation data, user properties in order) and expires (Unix
// nanoseconds, 0 for none: a retained message keeps its expiry, a
// relayed one carries the time it has left beside it).
func appendMessage(b []byte, pk *packets.Packet, expires int64) []byte {
	flags := pk.FixedHeader.Qos << msgQoSShift
	if pk.FixedHeader.Retain {
		flags |= msgRetain
	}
	if pk.Properties.PayloadFormatFlag {
		flags |= msgPayloadFormat
	}
	b = append(b, messageVersion, flags, pk.Properties.PayloadFormat)
	b = bincode.AppendString(b, pk.TopicName)
	b = bincode.AppendString(b, pk.Origin)
	b = bincode.AppendString(b, pk.Properties.ContentType)
	b = bincode.AppendString(b, pk.Properties.ResponseTopic)
	b = bincode.AppendBytes(b, pk.Properties.CorrelationData)
	b = binary.AppendUvarint(b, uint64(len(pk.Properties.User)))
	for _, u := range pk.Properties.User {
		b = bincode.AppendString(b, u.Key)
		b = bincode.AppendString(b, u.Val)
	}
	b = binary.AppendVarint(b, expires)
	return bincode.AppendBytes(b, pk.Payload)
}

// decodeMessage reads a message appendMessage wrote into pk (a PUBLISH),
// and returns its expiry. pk's payload and correlation data alias b.
func decodeMessage(b []byte, pk *packets.Packet) (expires int64, err error) {
	d := newMsgDecoder(b)
	if d.Byte() != messageVersion {
		return 0, errBadMessage
	}
	flags := d.Byte()
	pk.FixedHeader.Type = packets.Publish
	pk.FixedHeader.Qos = (flags >> msgQoSShift) & 3
	pk.FixedHeader.Retain = flags&msgRetain != 0
	pk.Properties.PayloadFormatFlag = flags&msgPayloadFormat != 0
	pk.Properties.PayloadFormat = d.Byte()
	pk.TopicName = d.Str()
	pk.Origin = d.Str()
	pk.Properties.ContentType = d.Str()
	pk.Properties.ResponseTopic = d.Str()
	if c := d.Bytes(); len(c) > 0 {
		pk.Properties.CorrelationData = c
	}
	if n := d.Count(); n > 0 {
		pk.Properties.User = make([]packets.UserProperty, n)
		for i := range pk.Properties.User {
			pk.Properties.User[i] = packets.UserProperty{Key: d.Str(), Val: d.Str()}
		}
	}
	expires = d.Varint()
	pk.Payload = d.Bytes()
	if d.Err() != nil || d.Len() != 0 || pk.FixedHeader.Qos > 2 {
		return 0, errBadMessage
	}
	return expires, nil
}

// sessionVersion starts every encoded session.
const sessionVersion = 1

// appendSubscriptions encodes a session's subscriptions.
func appendSubscriptions(b []byte, subs []packets.Subscription) []byte {
	b = append(b, sessionVersion)
	b = binary.AppendUvarint(b, uint64(len(subs)))
	for i := range subs {
		s := &subs[i]
		var flags byte
		if s.NoLocal {
			flags |= 1
		}
		if s.RetainAsPublished {
			flags |= 2
		}
		b = append(b, s.Qos, s.RetainHandling, flags)
		b = bincode.AppendString(b, s.Filter)
		b = binary.AppendUvarint(b, uint64(max(s.Identifier, 0)))
	}
	return b
}

func decodeSubscriptions(d *msgDecoder) []packets.Subscription {
	if d.Byte() != sessionVersion {
		d.Fail()
		return nil
	}
	n := d.Count()
	subs := make([]packets.Subscription, 0, n)
	for range n {
		s := packets.Subscription{Qos: d.Byte(), RetainHandling: d.Byte()}
		flags := d.Byte()
		s.NoLocal, s.RetainAsPublished = flags&1 != 0, flags&2 != 0
		s.Filter = d.Str()
		s.Identifier = int(d.Uvarint())
		if s.Qos > 2 || s.RetainHandling > 2 {
			d.Fail()
		}
		subs = append(subs, s)
	}
	return subs
}

// parseSubscriptions reads subscriptions appendSubscriptions wrote.
func parseSubscriptions(b []byte) ([]packets.Subscription, error) {
	d := newMsgDecoder(b)
	subs := decodeSubscriptions(&d)
	if d.Err() != nil || d.Len() != 0 {
		return nil, errBadMessage
	}
	return subs, nil
}

// appendSession encodes a session that moves to another node: its
// subscriptions, and its messages in flight in their order (the server's
// PUBLISH and PUBREL, and the PUBREC it keeps for a client's QoS 2
// message), each with its packet id and whether it was never sent.
func appendSession(b []byte, subs []packets.Subscription, inflight []packets.Packet) []byte {
	b = appendSubscriptions(b, subs)
	n := 0
	for i := range inflight {
		if movable(&inflight[i]) {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i := range inflight {
		pk := &inflight[i]
		if !movable(pk) {
			continue
		}
		var flags byte
		if pk.Queued || pk.Expiry < 0 { // queued, or parked for send quota: never sent
			flags |= 1
		}
		b = append(b, pk.FixedHeader.Type, flags)
		b = binary.AppendUvarint(b, uint64(pk.PacketID))
		if pk.FixedHeader.Type == packets.Publish {
			b = bincode.AppendBytes(b, appendMessage(nil, pk, pk.Expires))
		}
	}
	return b
}

// movable reports whether a message in flight moves with its session.
func movable(pk *packets.Packet) bool {
	switch pk.FixedHeader.Type {
	case packets.Publish, packets.Pubrel, packets.Pubrec:
		return true
	}
	return false
}

// parseSession reads a session appendSession wrote. The messages' payloads
// alias b.
func parseSession(b []byte) ([]packets.Subscription, []packets.Packet, error) {
	d := newMsgDecoder(b)
	subs := decodeSubscriptions(&d)
	n := d.Count()
	inflight := make([]packets.Packet, 0, n)
	for range n {
		typ, flags := d.Byte(), d.Byte()
		id := uint16(d.Uvarint())
		var pk packets.Packet
		switch typ {
		case packets.Publish:
			expires, err := decodeMessage(d.Bytes(), &pk)
			if err != nil {
				d.Fail()
			}
			pk.Expires = expires
		case packets.Pubrel:
			pk.FixedHeader = packets.FixedHeader{Type: packets.Pubrel, Qos: 1}
		case packets.Pubrec:
			pk.FixedHeader = packets.FixedHeader{Type: packets.Pubrec}
		default:
			d.Fail()
		}
		pk.PacketID = id
		pk.Queued = flags&1 != 0
		inflight = append(inflight, pk)
	}
	if d.Err() != nil || d.Len() != 0 {
		return nil, nil, errBadMessage
	}
	return subs, inflight, nil
}

// msgDecoder reads what the append functions of this file wrote
// (bincode, failing with errBadMessage).
type msgDecoder = bincode.Decoder

func newMsgDecoder(b []byte) msgDecoder { return bincode.NewDecoder(b, errBadMessage) }
