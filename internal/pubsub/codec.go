package pubsub

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/dssio/dss/hlc"
)

// ErrMalformed is returned for bytes that are not a command or a state
// this package wrote.
var ErrMalformed = errors.New("pubsub: malformed encoding")

// decoder reads what the append functions write. The first error sticks;
// every read after it returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() { d.err, d.b = ErrMalformed, nil }

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
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
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bool() bool { return d.byte() != 0 }

// bytes returns the next length-prefixed bytes, aliasing the input.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// clone returns a copy of the next length-prefixed bytes, nil for none:
// what the state keeps must not alias a log entry's buffer.
func (d *decoder) clone() []byte {
	b := d.bytes()
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func (d *decoder) string() string { return string(d.bytes()) }

// count reads a count of items that each take at least one byte.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) stamp() hlc.Timestamp {
	wall, counter := d.varint(), d.uvarint()
	if counter > math.MaxUint32 {
		d.fail()
	}
	return hlc.Timestamp{Wall: wall, Counter: uint32(counter), Node: d.string()}
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendString(b []byte, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendStamp(b []byte, t hlc.Timestamp) []byte {
	b = binary.AppendVarint(b, t.Wall)
	b = binary.AppendUvarint(b, uint64(t.Counter))
	return appendString(b, t.Node)
}
