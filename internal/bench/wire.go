package bench

import (
	"encoding/binary"
	"errors"
)

// The lean MQTT 5 codec of the hot path. The handshake (CONNECT, SUBSCRIBE)
// uses paho's packet codec; the packets exchanged per request are encoded
// and decoded here because paho's ReadPacket allocates a buffer, a packet,
// its properties and a string per user property for every packet, which
// would make the generator cost as much CPU as the server it measures.

// MQTT control packet types (high nibble of the first byte).
const (
	typeConnack    = 2
	typePublish    = 3
	typePuback     = 4
	typeSuback     = 9
	typePingresp   = 13
	typeDisconnect = 14
)

// MQTT 5 property identifiers that the generator reads or writes.
const (
	propContentType     = 0x03
	propResponseTopic   = 0x08
	propCorrelationData = 0x09
	propUser            = 0x26
)

var (
	errMalformed  = errors.New("malformed MQTT packet")
	errIncomplete = errors.New("incomplete MQTT packet")
)

// splitPacket finds the first complete packet in b. It returns the packet's
// first byte, its body (aliasing b) and its total length; errIncomplete
// when b does not hold it all yet.
func splitPacket(b []byte) (first byte, body []byte, n int, err error) {
	if len(b) < 2 {
		return 0, nil, 0, errIncomplete
	}
	length, i := 0, 1
	for shift := 0; ; shift += 7 {
		if i >= len(b) {
			return 0, nil, 0, errIncomplete
		}
		if i > 4 {
			return 0, nil, 0, errMalformed
		}
		c := b[i]
		i++
		length |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			break
		}
	}
	if len(b)-i < length {
		return 0, nil, 0, errIncomplete
	}
	return b[0], b[i : i+length], i + length, nil
}

// packetLen returns the total length that the packet starting at b will
// have, once its header is complete, so that a reader can grow its buffer.
func packetLen(b []byte) (int, bool) {
	length := 0
	for i, shift := 1, 0; i < len(b) && i <= 4; i, shift = i+1, shift+7 {
		length |= int(b[i]&0x7f) << shift
		if b[i]&0x80 == 0 {
			return i + 1 + length, true
		}
	}
	return 0, false
}

// publish is a decoded PUBLISH. Its slices alias the read buffer and are
// valid until the next read.
type publish struct {
	qos         byte
	packetID    uint16
	topic       []byte
	payload     []byte
	correlation []byte
	stat        []byte // __stat
	hasStat     bool
	ts          []byte // __ts
	hasTS       bool
}

// parsePublish decodes the body of a PUBLISH whose first byte is first.
func parsePublish(first byte, body []byte, p *publish) error {
	*p = publish{qos: (first >> 1) & 3}
	topic, rest, ok := readBinary(body)
	if !ok {
		return errMalformed
	}
	p.topic = topic
	if p.qos > 0 {
		if len(rest) < 2 {
			return errMalformed
		}
		p.packetID = binary.BigEndian.Uint16(rest)
		rest = rest[2:]
	}
	plen, m, ok := readVBI(rest)
	if !ok || len(rest)-m < plen {
		return errMalformed
	}
	props := rest[m : m+plen]
	p.payload = rest[m+plen:]
	for len(props) > 0 {
		id := props[0]
		props = props[1:]
		switch id {
		case propCorrelationData:
			p.correlation, props, ok = readBinary(props)
		case propUser:
			var k, v []byte
			if k, props, ok = readBinary(props); ok {
				v, props, ok = readBinary(props)
			}
			switch string(k) { // no allocation: the compiler compares in place
			case "__stat":
				p.stat, p.hasStat = v, true
			case "__ts":
				p.ts, p.hasTS = v, true
			}
		default:
			props, ok = skipProperty(id, props)
		}
		if !ok {
			return errMalformed
		}
	}
	return nil
}

// skipProperty skips the value of property id, whose size depends on its
// type (MQTT 5, section 2.2.2.2).
func skipProperty(id byte, b []byte) ([]byte, bool) {
	n := 0
	switch id {
	case 0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2a: // byte
		n = 1
	case 0x13, 0x21, 0x22, 0x23: // two byte integer
		n = 2
	case 0x02, 0x11, 0x18, 0x27: // four byte integer
		n = 4
	case 0x0b: // variable byte integer
		_, m, ok := readVBI(b)
		if !ok {
			return nil, false
		}
		n = m
	case 0x03, 0x08, 0x09, 0x12, 0x15, 0x16, 0x1a, 0x1c, 0x1f: // string or binary
		_, rest, ok := readBinary(b)
		return rest, ok
	case propUser: // string pair
		_, rest, ok := readBinary(b)
		if ok {
			_, rest, ok = readBinary(rest)
		}
		return rest, ok
	default:
		return nil, false
	}
	if len(b) < n {
		return nil, false
	}
	return b[n:], true
}

func readBinary(b []byte) (v, rest []byte, ok bool) {
	if len(b) < 2 {
		return nil, nil, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b)-2 < n {
		return nil, nil, false
	}
	return b[2 : 2+n], b[2+n:], true
}

func readVBI(b []byte) (v, n int, ok bool) {
	for i, shift := 0, 0; i < len(b) && i < 4; i, shift = i+1, shift+7 {
		v |= int(b[i]&0x7f) << shift
		if b[i]&0x80 == 0 {
			return v, i + 1, true
		}
	}
	return 0, 0, false
}

// parseAck decodes a PUBACK (or any acknowledgement of the same layout):
// a packet id and a reason code that is 0 when omitted.
func parseAck(body []byte) (packetID uint16, reason byte, err error) {
	if len(body) < 2 {
		return 0, 0, errMalformed
	}
	if len(body) > 2 {
		reason = body[2]
	}
	return binary.BigEndian.Uint16(body), reason, nil
}

func appendVBI(b []byte, v int) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v > 0 {
			c |= 0x80
		}
		b = append(b, c)
		if v == 0 {
			return b
		}
	}
}

func appendBinary(b []byte, v string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
	return append(b, v...)
}

// appendPuback acknowledges a QoS 1 PUBLISH with success; MQTT 5 lets the
// reason code be omitted then.
func appendPuback(b []byte, packetID uint16) []byte {
	return append(b, typePuback<<4, 2, byte(packetID>>8), byte(packetID))
}

// disconnectPacket is a normal DISCONNECT without properties.
var disconnectPacket = []byte{typeDisconnect << 4, 0}
