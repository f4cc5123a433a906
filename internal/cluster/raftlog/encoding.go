package raftlog

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

var errMalformed = errors.New("malformed log entry")

// appendEntry encodes a log entry: its fields in order, the data and
// extensions as they are.
func appendEntry(b []byte, l *raft.Log) []byte {
	b = binary.AppendUvarint(b, l.Index)
	b = binary.AppendUvarint(b, l.Term)
	b = append(b, byte(l.Type))
	b = binary.AppendVarint(b, l.AppendedAt.UnixNano())
	b = binary.AppendUvarint(b, uint64(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	return append(b, l.Extensions...)
}

// decodeEntry decodes what appendEntry wrote. The entry's Data and
// Extensions alias b.
func decodeEntry(b []byte, l *raft.Log) error {
	var ok bool
	if l.Index, b, ok = uvarint(b); !ok {
		return errMalformed
	}
	if l.Term, b, ok = uvarint(b); !ok {
		return errMalformed
	}
	if len(b) == 0 {
		return errMalformed
	}
	l.Type, b = raft.LogType(b[0]), b[1:]
	at, n := binary.Varint(b)
	if n <= 0 {
		return errMalformed
	}
	l.AppendedAt, b = time.Unix(0, at), b[n:]
	if l.Data, b, ok = lengthPrefixed(b); !ok {
		return errMalformed
	}
	if l.Extensions, b, ok = lengthPrefixed(b); !ok || len(b) != 0 {
		return errMalformed
	}
	if len(l.Data) == 0 {
		l.Data = nil
	}
	if len(l.Extensions) == 0 {
		l.Extensions = nil
	}
	return nil
}

// entryIndex returns the index of an encoded entry.
func entryIndex(b []byte) (uint64, bool) {
	i, _, ok := uvarint(b)
	return i, ok
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, b, false
	}
	return v, b[n:], true
}

func lengthPrefixed(b []byte) ([]byte, []byte, bool) {
	n, b, ok := uvarint(b)
	if !ok || n > uint64(len(b)) {
		return nil, b, false
	}
	return b[:n:n], b[n:], true
}

// isEntry reports whether payload is a well-formed log entry, for the
// search of an intact record after a bad one.
func isEntry(payload []byte) bool {
	var l raft.Log
	return decodeEntry(payload, &l) == nil
}
