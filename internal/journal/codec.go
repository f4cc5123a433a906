package journal

import (
	"encoding/binary"
	"errors"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// Record types. The first record of a file is its header.
const (
	recSegmentHeader  byte = 1
	recSnapshotHeader byte = 2
	recSnapshotFooter byte = 3
	recPut            byte = 10 // a key's whole state
	recDelete         byte = 11 // a key's removal
	recFloor          byte = 12 // a version issued for a key that is not kept
)

const (
	formatVersion = 1
	segmentMagic  = "dss-journal"
	snapshotMagic = "dss-snapshot"
)

const (
	flagFenced = 1 << iota
)

var errMalformed = errors.New("malformed record")

// appendChange appends the record payload of c: a put, a deletion or, for
// a change of a key that is not kept across restarts, a version floor.
func appendChange(b []byte, c *store.Change) []byte {
	switch {
	case !c.Deleted && !c.Volatile:
		b = append(b, recPut)
		b = binary.AppendUvarint(b, c.Seq)
		b = appendBytes(b, c.Key)
		b = appendVersion(b, c.Version)
		var flags byte
		if c.Fenced {
			flags |= flagFenced
		}
		b = append(b, flags)
		if c.Fenced {
			b = appendVersion(b, c.Fence)
		}
		b = binary.AppendVarint(b, c.ExpiresAt)
		return appendBytes(b, c.Value)
	case c.WasDurable:
		// A deletion, or a volatile value replacing a durable one: the
		// durable value must not come back after a restart.
		b = append(b, recDelete)
		b = binary.AppendUvarint(b, c.Seq)
		b = appendBytes(b, c.Key)
		return appendVersion(b, c.Version)
	default:
		b = append(b, recFloor)
		b = binary.AppendUvarint(b, c.Seq)
		return appendVersion(b, c.Version)
	}
}

func appendBytes[S ~string | ~[]byte](b []byte, s S) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendVersion(b []byte, v hlc.Timestamp) []byte {
	b = binary.AppendVarint(b, v.Wall)
	b = binary.AppendUvarint(b, uint64(v.Counter))
	return appendBytes(b, v.Node)
}

// decoder reads the fields of one record payload.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errMalformed
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errMalformed
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errMalformed
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes returns the next length-prefixed field; it aliases the payload.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errMalformed
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

// nodes interns node ids: nearly every version of a journal carries one of
// a handful of them.
type nodes map[string]string

func (n nodes) intern(b []byte) string {
	if s, ok := n[string(b)]; ok {
		return s
	}
	s := string(b)
	n[s] = s
	return s
}

func (d *decoder) version(in nodes) hlc.Timestamp {
	wall := d.varint()
	counter := d.uvarint()
	node := d.bytes()
	if counter > 1<<32-1 {
		d.err = errMalformed
	}
	return hlc.Timestamp{Wall: wall, Counter: uint32(counter), Node: in.intern(node)}
}

// decodeChange decodes a put, deletion or floor payload into c. Key and
// value are copied: the machine keeps them.
func decodeChange(payload []byte, in nodes, c *store.Change) error {
	d := decoder{b: payload}
	typ := d.byte()
	*c = store.Change{}
	switch typ {
	case recPut:
		c.Seq = d.uvarint()
		c.Key = string(d.bytes())
		c.Version = d.version(in)
		flags := d.byte()
		if flags&flagFenced != 0 {
			c.Fenced = true
			c.Fence = d.version(in)
		}
		c.ExpiresAt = d.varint()
		v := d.bytes()
		if d.err == nil {
			c.Value = append(make([]byte, 0, len(v)), v...)
		}
	case recDelete:
		c.Seq = d.uvarint()
		c.Key = string(d.bytes())
		c.Deleted = true
		c.Version = d.version(in)
	case recFloor:
		c.Seq = d.uvarint()
		c.Version = d.version(in)
	default:
		return errMalformed
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 || (typ != recFloor && c.Key == "") {
		return errMalformed
	}
	return nil
}

// header is the first record of a file.
type header struct {
	kind       byte   // recSegmentHeader or recSnapshotHeader
	seq        uint64 // segment: the first seq it may hold; snapshot: its seq
	maxVersion hlc.Timestamp
}

func appendHeader(b []byte, h header) []byte {
	b = append(b, h.kind)
	magic := segmentMagic
	if h.kind == recSnapshotHeader {
		magic = snapshotMagic
	}
	b = appendBytes(b, magic)
	b = binary.AppendUvarint(b, formatVersion)
	b = binary.AppendUvarint(b, h.seq)
	return appendVersion(b, h.maxVersion)
}

func decodeHeader(payload []byte, kind byte) (header, error) {
	d := decoder{b: payload}
	h := header{kind: d.byte()}
	magic := string(d.bytes())
	version := d.uvarint()
	h.seq = d.uvarint()
	h.maxVersion = d.version(nodes{})
	want := segmentMagic
	if kind == recSnapshotHeader {
		want = snapshotMagic
	}
	switch {
	case d.err != nil || h.kind != kind || magic != want:
		return h, errors.New("not a " + want + " file")
	case version != formatVersion:
		return h, errors.New("unknown format version")
	}
	return h, nil
}

// snapshotFooter is the payload of the last record of a snapshot: how
// many keys it holds and the highest version issued.
func snapshotFooter(count uint64, maxVersion hlc.Timestamp) []byte {
	b := []byte{recSnapshotFooter}
	b = binary.AppendUvarint(b, count)
	return appendVersion(b, maxVersion)
}

// decodeSnapshotFooter reads what snapshotFooter wrote.
func decodeSnapshotFooter(payload []byte, in nodes) (count uint64, maxVersion hlc.Timestamp, err error) {
	d := decoder{b: payload[1:]}
	count = d.uvarint()
	maxVersion = d.version(in)
	return count, maxVersion, d.err
}
