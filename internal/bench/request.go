package bench

import (
	"encoding/binary"
	"strconv"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// clientNode is the node id of the __ts the generator sends.
const clientNode = "bench"

// tsLen is the length of a __ts value: the wall clock padded to 15 digits,
// the counter to 5, and the node id. It is fixed for the next few
// millennia, which lets a template reserve room for it.
var tsLen = len(hlc.Timestamp{Node: clientNode}.String())

// appendTimestamp appends the __ts value for the wall clock ms.
func appendTimestamp(b []byte, ms int64) []byte {
	return hlc.Timestamp{Wall: ms, Node: clientNode}.AppendText(b)
}

// template is one request PUBLISH, encoded once, with the offsets of the
// fields that change from request to request. Writing a request copies
// the template and patches those fields in place.
type template struct {
	verb    verb
	pkt     []byte
	pidOff  int // packet identifier, 2 bytes
	corrOff int // correlation data, 8 bytes
	tsOff   int // __ts value, tsLen bytes
	keyOff  int // the key's decimal digits
	digits  int
	valOff  int // the value, when the verb has one; -1 otherwise
}

// keySpace names the keys prefix + a zero-padded decimal index + suffix,
// so that every key of a run has the same length and a template fits them
// all.
type keySpace struct {
	prefix string
	n      int
	digits int
	suffix string
}

func newKeySpace(prefix string, n int) keySpace {
	return keySpace{prefix: prefix, n: n, digits: len(strconv.Itoa(max(n-1, 0)))}
}

// key returns the key with index i.
func (k keySpace) key(i int) []byte {
	b := append([]byte(k.prefix), make([]byte, k.digits)...)
	putDigits(b[len(k.prefix):], i)
	return append(b, k.suffix...)
}

// putDigits writes v in decimal into b, zero-padded to len(b).
func putDigits(b []byte, v int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

// requestArgs are the RESP3 arguments of a request other than the key.
type requestArgs struct {
	value []byte // SET, VDEL
	px    int64  // SET PX, in ms; 0 for none
	stop  bool   // KEYNOTIFY STOP
	// pattern registers KEYNOTIFY for a pattern (dss's extension): the
	// key of the template is the pattern.
	pattern bool
}

// newTemplate encodes the request verb on a key of ks, asking for the
// response on responseTopic.
func newTemplate(v verb, ks keySpace, args requestArgs, responseTopic string) *template {
	t := &template{verb: v, digits: ks.digits, valOff: -1}
	elems := [][]byte{[]byte(v.String()), ks.key(0)}
	switch v {
	case opSet:
		elems = append(elems, args.value)
		if args.px > 0 {
			elems = append(elems, []byte("PX"), strconv.AppendInt(nil, args.px, 10))
		}
	case opVDel:
		elems = append(elems, args.value)
	case opKeyNotify:
		if args.pattern {
			elems = append(elems, []byte("PATTERN"))
		}
		if args.stop {
			elems = append(elems, []byte("STOP"))
		}
	}
	payload := resp.AppendArray(nil, elems...)

	var props []byte
	props = append(props, propResponseTopic)
	props = appendBinary(props, responseTopic)
	props = append(props, propCorrelationData, 0, 8)
	corrOff := len(props)
	props = append(props, make([]byte, 8)...)
	props = append(props, propUser)
	props = appendBinary(props, wire.PropTimestamp)
	props = binaryHeader(props, tsLen)
	tsOff := len(props)
	props = appendTimestamp(props, 0)
	props = append(props, propUser)
	props = appendBinary(props, wire.PropProtocolVersion)
	props = appendBinary(props, wire.ProtocolVersion)

	var vh []byte
	vh = appendBinary(vh, wire.RequestTopic)
	pidOff := len(vh)
	vh = append(vh, 0, 1)
	vh = appendVBI(vh, len(props))
	propsOff := len(vh)
	vh = append(vh, props...)
	payloadOff := len(vh)

	pkt := []byte{typePublish<<4 | 1<<1} // QoS 1
	pkt = appendVBI(pkt, len(vh)+len(payload))
	base := len(pkt)
	pkt = append(pkt, vh...)
	pkt = append(pkt, payload...)

	t.pkt = pkt
	t.pidOff = base + pidOff
	t.corrOff = base + propsOff + corrOff
	t.tsOff = base + propsOff + tsOff
	// The key is the second bulk string, after the array header and the
	// verb; the value, if any, is the third.
	keyAt := payloadOff + len(resp.AppendBulk(resp.AppendArrayHeader(nil, len(elems)), elems[0])) + bulkHeaderLen(len(elems[1]))
	t.keyOff = base + keyAt + len(ks.prefix)
	if v == opSet || v == opVDel {
		t.valOff = base + keyAt + len(elems[1]) + 2 + bulkHeaderLen(len(args.value))
	}
	return t
}

// bulkHeaderLen is the length of "$<n>\r\n".
func bulkHeaderLen(n int) int { return len(strconv.Itoa(n)) + 3 }

func binaryHeader(b []byte, n int) []byte { return binary.BigEndian.AppendUint16(b, uint16(n)) }

// appendRequest appends the request for key index key to dst.
func (t *template) appendRequest(dst []byte, packetID uint16, corr uint64, ts []byte, key int) []byte {
	start := len(dst)
	dst = append(dst, t.pkt...)
	p := dst[start:]
	binary.BigEndian.PutUint16(p[t.pidOff:], packetID)
	binary.BigEndian.PutUint64(p[t.corrOff:], corr)
	copy(p[t.tsOff:t.tsOff+tsLen], ts)
	putDigits(p[t.keyOff:t.keyOff+t.digits], key)
	return dst
}
