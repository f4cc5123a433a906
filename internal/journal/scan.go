package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/dssio/dss/internal/store"
)

// scanWindow is how much of a file one read of nextIntact looks at.
const scanWindow = 1 << 20

// nextIntact returns the offset of the first intact record at or after
// from in the file r of size bytes whose payload accept takes, or -1 when
// there is none. Records are framed with their length and a CRC-32C, so
// an intact frame can be found again after damage of any length.
func nextIntact(r io.ReaderAt, size, from int64, accept func(payload []byte) bool) (int64, error) {
	buf := make([]byte, scanWindow+headerSize)
	var big []byte
	for base := from; base+headerSize < size; base += scanWindow {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-base)], base)
		if err != nil && !errors.Is(err, io.EOF) {
			return -1, err
		}
		b := buf[:n]
		for i := 0; i < scanWindow && i+headerSize <= len(b); i++ {
			l := int64(binary.LittleEndian.Uint32(b[i:]))
			at := base + int64(i)
			if l == 0 || l > maxRecord || at+headerSize+l > size {
				continue
			}
			var payload []byte
			if end := int64(i) + headerSize + l; end <= int64(len(b)) {
				payload = b[int64(i)+headerSize : end]
			} else {
				if int64(cap(big)) < l {
					big = make([]byte, l)
				}
				payload = big[:l]
				if _, err := r.ReadAt(payload, at+headerSize); err != nil {
					return -1, err
				}
			}
			if crc32.Checksum(payload, castagnoli) == binary.LittleEndian.Uint32(b[i+4:]) && accept(payload) {
				return at, nil
			}
		}
	}
	return -1, nil
}

// isChange reports whether payload is a well-formed change record.
func isChange(payload []byte) bool {
	var c store.Change
	return decodeChange(payload, nodes{}, &c) == nil
}

// tornTail reports whether the bad record at offset at of the file r (of
// size bytes), refused with err, is what a crash during the last write
// leaves: no intact record follows it, and it is cut short by the end of
// the file, or zeros stand where its bytes should be (space the file
// system allocated but the write never reached). A complete record whose
// bytes are wrong otherwise is damage, not a torn write: cutting it off
// would lose a change that may have been acknowledged.
func tornTail(r io.ReaderAt, size, at int64, err error) (bool, error) {
	return tornTailOf(r, size, at, err, isChange)
}

// tornTailOf is tornTail for a file whose intact records are those that
// accept takes.
func tornTailOf(r io.ReaderAt, size, at int64, err error, accept func(payload []byte) bool) (bool, error) {
	switch {
	case errors.Is(err, errTorn), errors.Is(err, errZeros):
	case errors.Is(err, errChecksum):
		var h [headerSize]byte
		if _, err := r.ReadAt(h[:], at); err != nil {
			return false, err
		}
		rec := make([]byte, binary.LittleEndian.Uint32(h[:]))
		if _, err := r.ReadAt(rec, at+headerSize); err != nil {
			return false, err
		}
		if !bytes.Contains(rec, make([]byte, 8)) && (len(rec) == 0 || rec[len(rec)-1] != 0) {
			return false, nil
		}
	default:
		return false, nil
	}
	next, err := nextIntact(r, size, at+1, accept)
	return next < 0, err
}
