package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The journal's record framing (a 4-byte length, a 4-byte CRC-32C of the
// payload, the payload), its rules for the end of a file that a crash
// cut short, and its durable file operations, for the other append-only
// logs of a node (the Raft log of a cluster node), so that every log on
// disk is framed, checked and repaired alike.

// FrameHeaderSize is the size of a record's frame before its payload.
const FrameHeaderSize = headerSize

// AppendFrame appends one framed record holding payload to b.
func AppendFrame(b, payload []byte) []byte { return appendRecord(b, payload) }

// FrameReader reads framed records one after the other.
type FrameReader struct{ rr *recordReader }

// NewFrameReader returns a reader of the records of r from its start.
func NewFrameReader(r io.Reader) *FrameReader { return &FrameReader{rr: newRecordReader(r)} }

// Next returns the next record's payload, valid until the following call,
// and its offset. At a clean end of the file it returns io.EOF; for a bad
// record, an error to hand to TornTail.
func (f *FrameReader) Next() (payload []byte, offset int64, err error) {
	offset = f.rr.offset
	payload, err = f.rr.next()
	return payload, offset, err
}

// Offset returns the offset of the next record.
func (f *FrameReader) Offset() int64 { return f.rr.offset }

// TornTail reports whether the bad record at offset at of the file r (of
// size bytes), that Next refused with err, is what a crash during the
// last write leaves (cut short by the end of the file, or zeros where its
// bytes should be, with no intact record that accept takes after it),
// rather than damage.
func TornTail(r io.ReaderAt, size, at int64, err error, accept func(payload []byte) bool) (bool, error) {
	return tornTailOf(r, size, at, err, accept)
}

// CutTornTail cuts the file name (of size bytes) at offset at, the end
// of a write that a crash interrupted, after a copy of the bytes it cuts
// went to a new directory torn-<time> beside it; it returns the copy's
// name ("" when nothing was cut). The cut is durable.
func CutTornTail(name string, size, at int64) (string, error) {
	copyName := ""
	if size > at {
		aside, err := newAsideDir(filepath.Dir(name), "torn")
		if err != nil {
			return "", err
		}
		copyName = filepath.Join(aside, fmt.Sprintf("%s.from-%d", filepath.Base(name), at))
		if err := copyRange(name, at, copyName); err != nil {
			return "", fmt.Errorf("keeping the end of %s: %w", name, err)
		}
	}
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := f.Truncate(at); err != nil {
		return "", err
	}
	return copyName, f.Sync()
}

// Fdatasync forces f's data to stable storage, and of its metadata what
// reading the data back needs.
func Fdatasync(f *os.File) error { return fdatasync(f) }

// SyncDir makes the creation, renaming and removal of files in dir
// durable.
func SyncDir(dir string) error { return syncDir(dir) }

// ParseFrame returns the payload of the one framed record that b holds
// whole, after checking its length and checksum.
func ParseFrame(b []byte) ([]byte, error) {
	if len(b) < headerSize {
		return nil, errTorn
	}
	size := binary.LittleEndian.Uint32(b[0:4])
	if int64(size) != int64(len(b)-headerSize) {
		return nil, fmt.Errorf("record length %d is %w", size, errRecordLength)
	}
	payload := b[headerSize:]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[4:8]) {
		return nil, errChecksum
	}
	return payload, nil
}

// FillFrame fills in the frame of the record whose frame (of
// FrameHeaderSize bytes) starts at start in b, with everything after it
// as the payload: a record encoded in place, without a copy.
func FillFrame(b []byte, start int) []byte { return endRecord(b, start) }
