package cluster

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"github.com/dssio/dss/internal/bincode"
	"io"
)

// A stream of messages (connection kind connRelay) opens with a header
// (relayMagic, the sender's node id and process epoch) and then carries
// frames as the forwarding streams do (a uvarint length, a uvarint count
// of items, the items). The sender's items are messages and pings; the
// receiver answers each frame with a frame of one acknowledgement: the
// sequence number of the last message it delivered.

// relayMagic starts every stream of messages: a node that does not speak
// this version of the stream closes it.
const relayMagic = "dss-relay-1\n"

// The kinds of items a sender sends.
const (
	relayMessage byte = 1
	relayPing    byte = 2
)

// relayHeader opens a stream: who sends it.
type relayHeader struct {
	node  string
	epoch uint64
}

func appendRelayHeader(b []byte, h relayHeader) []byte {
	b = append(b, relayMagic...)
	b = bincode.AppendString(b, h.node)
	return binary.AppendUvarint(b, h.epoch)
}

func readRelayHeader(r *bufio.Reader) (relayHeader, error) {
	magic := make([]byte, len(relayMagic))
	if _, err := io.ReadFull(r, magic); err != nil {
		return relayHeader{}, err
	}
	if string(magic) != relayMagic {
		return relayHeader{}, fmt.Errorf("cluster: a message stream of another version (%q)", magic)
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || n > 1024 {
		return relayHeader{}, errShort
	}
	node := make([]byte, n)
	if _, err := io.ReadFull(r, node); err != nil {
		return relayHeader{}, err
	}
	h := relayHeader{node: string(node)}
	if h.epoch, err = binary.ReadUvarint(r); err != nil {
		return relayHeader{}, err
	}
	return h, nil
}

// appendRelayMessage encodes a message item: its sequence number, QoS,
// the nanoseconds it has left (0: no expiry), the shared subscriptions
// the receiver serves it to, and the message.
func appendRelayMessage(b []byte, it *relayItem, left int64) []byte {
	b = append(b, relayMessage)
	b = binary.AppendUvarint(b, it.seq)
	b = append(b, it.qos)
	b = binary.AppendVarint(b, left)
	b = binary.AppendUvarint(b, uint64(len(it.groups)))
	for _, g := range it.groups {
		b = bincode.AppendString(b, g)
	}
	return bincode.AppendBytes(b, it.msg)
}

// relayed is a message item as the receiver reads it.
type relayed struct {
	seq    uint64
	qos    byte
	left   int64
	groups []string
	msg    []byte // aliases the frame
}

// decodeRelayItem reads the next item of d: a message (ping false) or a
// ping.
func decodeRelayItem(d *decoder) (m relayed, ping bool) {
	switch kind := d.Byte(); kind {
	case relayPing:
		return m, true
	case relayMessage:
	default:
		if d.Err() == nil {
			d.Fail()
		}
		return m, false
	}
	m.seq = d.Uvarint()
	m.qos = d.Byte()
	m.left = d.Varint()
	n := d.Uvarint()
	if n > uint64(d.Len()) {
		d.Fail()
		return m, false
	}
	if n > 0 {
		m.groups = make([]string, n)
		for i := range m.groups {
			m.groups[i] = d.Str()
		}
	}
	m.msg = d.Bytes()
	return m, false
}
