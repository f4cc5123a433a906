package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	headerSize = 8
	// maxRecord bounds a record's payload: a value of the largest MQTT
	// packet plus its key and metadata.
	maxRecord = 300 << 20
)

// appendRecord appends one framed record holding payload to b.
func appendRecord(b, payload []byte) []byte {
	var h [headerSize]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:8], crc32.Checksum(payload, castagnoli))
	b = append(b, h[:]...)
	return append(b, payload...)
}

// beginRecord reserves room for a record header at the end of b; the
// payload is appended after it and endRecord fills the header in. This
// encodes a record without a copy of its payload.
func beginRecord(b []byte) ([]byte, int) {
	return append(b, make([]byte, headerSize)...), len(b)
}

func endRecord(b []byte, start int) []byte {
	payload := b[start+headerSize:]
	binary.LittleEndian.PutUint32(b[start:start+4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[start+4:start+8], crc32.Checksum(payload, castagnoli))
	return b
}

// errTorn reports a record cut short by the end of the file.
var errTorn = errors.New("record cut short by the end of the file")

// CorruptError reports damage in a journal or snapshot file.
type CorruptError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("journal: %s is damaged at offset %d: %s; `dss recover` keeps every intact record, before and after the damage (see `dss recover --help`)", e.File, e.Offset, e.Reason)
}

// recordReader reads framed records.
type recordReader struct {
	r      *bufio.Reader
	offset int64 // of the next record
	buf    []byte
}

func newRecordReader(r io.Reader) *recordReader {
	return &recordReader{r: bufio.NewReaderSize(r, 1<<20)}
}

// next returns the next record's payload, valid until the following call.
// It returns io.EOF at a clean end, errTorn for a record cut short, and a
// checksum or length error otherwise.
func (rr *recordReader) next() ([]byte, error) {
	var h [headerSize]byte
	_, err := io.ReadFull(rr.r, h[:])
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case err == io.ErrUnexpectedEOF:
		return nil, errTorn
	case err != nil:
		return nil, err
	}
	size := binary.LittleEndian.Uint32(h[0:4])
	sum := binary.LittleEndian.Uint32(h[4:8])
	if size == 0 {
		// No record is empty: this is space a crash left behind.
		return nil, errZeros
	}
	if size > maxRecord {
		return nil, fmt.Errorf("record length %d is %w", size, errRecordLength)
	}
	if cap(rr.buf) < int(size) {
		rr.buf = make([]byte, size)
	}
	payload := rr.buf[:size]
	if _, err := io.ReadFull(rr.r, payload); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, errTorn
		}
		return nil, err
	}
	if crc32.Checksum(payload, castagnoli) != sum {
		return nil, errChecksum
	}
	rr.offset += headerSize + int64(size)
	return payload, nil
}

// errChecksum reports a record whose payload does not match its checksum.
var errChecksum = errors.New("checksum mismatch")

// errZeros reports a record header of zero bytes: space a crash left
// behind after the last complete write.
var errZeros = errors.New("zeroed record header")
