package store

import (
	"encoding/binary"
	"unsafe"
)

// A record is one stored key with its value and metadata, in a slab of
// the arena. Records never change: a new value, version or flag makes a
// new record.
//
// Layout:
//
//	[0:8)   version wall clock, little endian
//	[8:12)  version counter
//	[12]    flags
//	[13:21) seq of the key's last change
//	uvarint index of the version's node id in Machine.nodes
//	uvarint key length
//	uvarint value length
//	key, value
type record string

const (
	flagFenced   = 1 << 0 // Machine.fences holds the key's token
	flagVolatile = 1 << 1 // the key need not survive a restart
	flagDeadline = 1 << 2 // Machine.deadlineOf holds the key's deadline

	recordFixed = 21
)

// recordHeader is the metadata of a record.
type recordHeader struct {
	wall    int64
	counter uint32
	flags   byte
	seq     uint64
	node    uint32
}

// recordSize returns the size of a record for key and value.
func recordSize(h recordHeader, keyLen, valueLen int) int {
	return recordFixed + uvarintLen(uint64(h.node)) + uvarintLen(uint64(keyLen)) + uvarintLen(uint64(valueLen)) + keyLen + valueLen
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// writeRecord fills b, of recordSize bytes, with the record.
func writeRecord(b []byte, h recordHeader, key string, value []byte) record {
	binary.LittleEndian.PutUint64(b[0:8], uint64(h.wall))
	binary.LittleEndian.PutUint32(b[8:12], h.counter)
	b[12] = h.flags
	binary.LittleEndian.PutUint64(b[13:21], h.seq)
	v := binary.AppendUvarint(b[:recordFixed], uint64(h.node))
	v = binary.AppendUvarint(v, uint64(len(key)))
	v = binary.AppendUvarint(v, uint64(len(value)))
	v = append(v, key...)
	v = append(v, value...)
	return record(unsafe.String(unsafe.SliceData(b), len(v)))
}

func (r record) header() recordHeader {
	node, _ := uvarintString(string(r[recordFixed:]))
	return recordHeader{
		wall:    int64(le64(string(r), 0)),
		counter: uint32(le64(string(r), 8) & 0xffffffff),
		flags:   r[12],
		seq:     le64(string(r), 13),
		node:    uint32(node),
	}
}

// le64 reads eight little-endian bytes of s at off (only the first four
// matter for the counter, and the record always has eight there).
func le64(s string, off int) uint64 {
	_ = s[off+7]
	return uint64(s[off]) | uint64(s[off+1])<<8 | uint64(s[off+2])<<16 | uint64(s[off+3])<<24 |
		uint64(s[off+4])<<32 | uint64(s[off+5])<<40 | uint64(s[off+6])<<48 | uint64(s[off+7])<<56
}

func (r record) flags() byte { return r[12] }

// layout returns where the key and the value start and how long they are.
func (r record) layout() (keyOff, keyLen, valueLen int) {
	off := recordFixed
	_, n := uvarintString(string(r[off:]))
	off += n
	klen, n := uvarintString(string(r[off:]))
	off += n
	vlen, n := uvarintString(string(r[off:]))
	return off + n, int(klen), int(vlen)
}

// key returns the key; it aliases the record.
func (r record) key() string {
	off, klen, _ := r.layout()
	return string(r[off : off+klen])
}

// value returns the value; it aliases the record and must not be modified.
func (r record) value() []byte {
	off, klen, vlen := r.layout()
	off += klen
	if vlen == 0 {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(string(r[off:])), vlen)
}

// recordAt returns the record that starts at p. It reads the header byte
// by byte, never past the record's end.
func recordAt(p unsafe.Pointer) record {
	off := recordFixed
	readUvarint := func() uint64 {
		var x uint64
		var shift uint
		for {
			c := *(*byte)(unsafe.Add(p, off))
			off++
			if c < 0x80 {
				return x | uint64(c)<<shift
			}
			x |= uint64(c&0x7f) << shift
			shift += 7
		}
	}
	readUvarint() // node
	klen := readUvarint()
	vlen := readUvarint()
	return record(unsafe.String((*byte)(p), off+int(klen)+int(vlen)))
}

// uvarintString reads a uvarint from the front of s.
func uvarintString(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			return x | uint64(c)<<shift, i + 1
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, 0
}
