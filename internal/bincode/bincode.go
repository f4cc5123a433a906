// Package bincode is the compact binary encoding of what the nodes of a
// cluster send each other and replicate: unsigned and signed varints,
// length-prefixed bytes and HLC timestamps, written by the Append
// functions and read by a Decoder whose first error sticks, so that a
// codec reads a whole record and checks once. It imports only the
// standard library and hlc.
package bincode

import (
	"encoding/binary"
	"math"

	"github.com/dssio/dss/hlc"
)

// Decoder reads what the Append functions wrote. The first error sticks:
// every read after it returns zero values.
type Decoder struct {
	b   []byte
	err error
	bad error // what malformed input sets
}

// NewDecoder returns a decoder of b that fails with bad on malformed
// input.
func NewDecoder(b []byte, bad error) Decoder { return Decoder{b: b, bad: bad} }

// Err returns the first error, or nil.
func (d *Decoder) Err() error { return d.err }

// SetErr makes err the decoder's error, unless it has one.
func (d *Decoder) SetErr(err error) {
	if d.err == nil {
		d.err, d.b = err, nil
	}
}

// Fail marks the input malformed.
func (d *Decoder) Fail() { d.err, d.b = d.bad, nil }

// Len returns the number of bytes not read yet.
func (d *Decoder) Len() int { return len(d.b) }

func (d *Decoder) Uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.Fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *Decoder) Varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.Fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *Decoder) Byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.Fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *Decoder) Bool() bool { return d.Byte() != 0 }

// Bytes returns the next length-prefixed bytes, aliasing the input.
func (d *Decoder) Bytes() []byte {
	n := d.Uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.Fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// Clone returns a copy of the next length-prefixed bytes, nil for none:
// what is kept must not alias the buffer it was read from.
func (d *Decoder) Clone() []byte {
	b := d.Bytes()
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// Str returns the next length-prefixed bytes as a string.
func (d *Decoder) Str() string { return string(d.Bytes()) }

// Count reads a count of items that each take at least one byte: one
// larger than what is left is malformed, not a size to allocate.
func (d *Decoder) Count() int {
	n := d.Uvarint()
	if n > uint64(len(d.b)) {
		d.Fail()
		return 0
	}
	return int(n)
}

// Stamp reads a timestamp; a counter wider than its 32 bits is damage,
// not a value to cut down.
func (d *Decoder) Stamp() hlc.Timestamp {
	wall, counter := d.Varint(), d.Uvarint()
	if counter > math.MaxUint32 {
		d.Fail()
	}
	return hlc.Timestamp{Wall: wall, Counter: uint32(counter), Node: d.Str()}
}

// AppendBytes appends v with its length.
func AppendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// AppendString appends v with its length.
func AppendString(b []byte, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// AppendBool appends v as one byte.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendStamp appends t as Stamp reads it.
func AppendStamp(b []byte, t hlc.Timestamp) []byte {
	b = binary.AppendVarint(b, t.Wall)
	b = binary.AppendUvarint(b, uint64(t.Counter))
	return AppendString(b, t.Node)
}
