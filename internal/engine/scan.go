package engine

import (
	"unicode/utf8"

	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// The bounds of one SCAN page: the keys it looks at, the index segments it
// goes through, and (unless the request asks for less) the total length of
// the keys it answers. A page holds the engine lock for its whole
// duration, a fraction of a millisecond, whatever the number of keys.
const (
	scanExamine     = 1024
	scanSegments    = 8
	ScanReplyBytes  = 1 << 20
	minScanReplyLen = 1 << 10
)

// scanLocked carries out a SCAN on this node's machine: one page of the
// keys that match the pattern, from the position the token carries.
func (n *Node) scanLocked(op *Op, now int64) {
	r := &op.Request
	var from uint64
	id := n.m.ScanID()
	if r.HasToken {
		pos, err := wire.ParseScanToken(r.Token)
		if err == nil && pos.ID != id {
			err = wire.ErrBadScanToken
		}
		if err != nil {
			op.Result.Err = err
			return
		}
		from = pos.Next
	}
	if !utf8.Valid(r.Key) {
		return // a pattern that is not UTF-8 matches nothing: the last page
	}
	pattern, readable := string(r.Key), op.Readable
	match := func(key string) bool {
		return wire.MatchPattern(pattern, key) && (readable == nil || readable(key))
	}
	maxBytes := op.MaxReplyBytes
	if maxBytes <= 0 {
		maxBytes = ScanReplyBytes
	}
	p := n.m.Scan(store.ScanQuery{
		From: from, Now: now, Examine: scanExamine, Segments: scanSegments,
		MaxBytes: max(maxBytes, minScanReplyLen), Match: match,
	}, nil)
	op.Result.Keys, op.Result.More = p.Keys, p.More
	op.Result.Position = wire.ScanPosition{ID: id, Next: p.Next}
}
