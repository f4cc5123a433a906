package service

import (
	"strconv"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/resp"
)

// appendKeyInfoReply encodes the answer to KEYINFO of a key that exists:
// an array of three bulk strings, the value, the milliseconds left before
// the key expires ("-1": it does not expire) and the fencing token that
// protects it ("": none). Bulk strings throughout, as SCAN's pages, so
// that a client reads it with the parser it has for arrays.
func appendKeyInfoReply(r *engine.Result) []byte {
	ttl := int64(-1)
	if r.Info.Deadline != 0 {
		ttl = max(r.Info.Deadline-r.Now, 1)
	}
	var token string
	if r.Info.Fenced {
		token = r.Info.Fence.String()
	}
	b := make([]byte, 0, len(r.Value)+len(token)+48)
	b = resp.AppendArrayHeader(b, 3)
	b = resp.AppendBulk(b, r.Value)
	b = resp.AppendBulk(b, strconv.AppendInt(nil, ttl, 10))
	return resp.AppendBulkString(b, token)
}
