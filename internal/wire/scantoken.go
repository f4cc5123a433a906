package wire

import (
	"encoding/binary"
	"strconv"
)

// A SCAN continuation token is opaque to clients. dss's has the shape
// "digits;digits;bytes" that the vendor's tokens have (a client may check
// that much): "1;" (the format), the scan id of the machine that made it
// (a number telling which hash orders the keys, see store.Machine.ScanID)
// and ";", then the position, eight bytes in big-endian order.

// ScanPosition is what a continuation token carries.
type ScanPosition struct {
	// ID is the scan id of the machine that made the position: a node
	// whose machine orders keys by another hash cannot continue it.
	ID uint32
	// Next is the position of the next page.
	Next uint64
}

// scanTokenFormat is the first field of every token dss makes.
const scanTokenFormat = "1"

// AppendScanToken appends the token of pos to b.
func AppendScanToken(b []byte, pos ScanPosition) []byte {
	b = append(b, scanTokenFormat...)
	b = append(b, ';')
	b = strconv.AppendUint(b, uint64(pos.ID), 10)
	b = append(b, ';')
	return binary.BigEndian.AppendUint64(b, pos.Next)
}

// ParseScanToken reads a token that AppendScanToken made; any other is
// ErrBadScanToken.
func ParseScanToken(tok []byte) (ScanPosition, *Error) {
	rest, ok := cutField(tok, scanTokenFormat)
	if !ok {
		return ScanPosition{}, ErrBadScanToken
	}
	i := 0
	for i < len(rest) && i < 11 && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i == len(rest) || rest[i] != ';' || len(rest)-i-1 != 8 {
		return ScanPosition{}, ErrBadScanToken
	}
	id, err := strconv.ParseUint(string(rest[:i]), 10, 32)
	if err != nil {
		return ScanPosition{}, ErrBadScanToken
	}
	return ScanPosition{ID: uint32(id), Next: binary.BigEndian.Uint64(rest[i+1:])}, nil
}

// cutField returns what follows "field;" at the start of b.
func cutField(b []byte, field string) ([]byte, bool) {
	if len(b) <= len(field) || string(b[:len(field)]) != field || b[len(field)] != ';' {
		return nil, false
	}
	return b[len(field)+1:], true
}
