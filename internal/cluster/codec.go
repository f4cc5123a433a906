package cluster

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/dssio/dss/hlc"
)

var errShort = errors.New("cluster: malformed encoding")

// decoder reads what the append functions of this package wrote. The
// first error sticks; every read after it returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() { d.err, d.b = errShort, nil }

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

func (d *decoder) string() string { return string(d.bytes()) }

// version decodes a version; a counter wider than its 32 bits is damage,
// not a value to cut down.
func (d *decoder) version() hlc.Timestamp {
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

func appendVersion(b []byte, v hlc.Timestamp) []byte {
	b = binary.AppendVarint(b, v.Wall)
	b = binary.AppendUvarint(b, uint64(v.Counter))
	return appendString(b, v.Node)
}
