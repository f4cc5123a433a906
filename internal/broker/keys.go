package broker

import (
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// scanReplyRoom is what a SCAN response takes beyond its keys' bytes, and
// keeps the page within the client's Maximum Packet Size: the fixed and
// variable headers, the response topic, correlation data and user
// properties of a response are well within it.
const scanReplyRoom = 8 << 10

// prepareScan fills in what the engine needs of a SCAN that the request
// does not say: under a policy, which keys the client may read (the page
// leaves out the others, and SCAN needs no grant of its own); and how
// large a page the client can receive.
func prepareScan(c *call) {
	if a := accessOf(c.client); a != nil {
		c.op.Readable = a.readable()
	}
	if limit := int(c.client.Properties.Props.MaximumPacketSize); limit > 0 {
		// A response larger than the client's Maximum Packet Size would
		// never reach it (MQTT 5, 3.1.2.11.4).
		c.op.MaxReplyBytes = min(engine.ScanReplyBytes, max(limit-scanReplyRoom-len(c.responseTopic)-len(c.correlation), limit/2))
	}
}

// appendScanReply appends the payload of a SCAN page: an array of the
// keys alone when it is the last page, or of the keys and the token of
// the next one.
//
//	*1\r\n*<N>\r\n<N bulk strings>                    last page
//	*2\r\n*<N>\r\n<N bulk strings>$<n>\r\n<token>\r\n   more follow
func appendScanReply(b []byte, r *engine.Result) []byte {
	if r.More {
		b = resp.AppendArrayHeader(b, 2)
	} else {
		b = resp.AppendArrayHeader(b, 1)
	}
	b = resp.AppendArrayHeader(b, len(r.Keys))
	for _, k := range r.Keys {
		b = resp.AppendBulkString(b, k)
	}
	if r.More {
		var tok [32]byte
		b = resp.AppendBulk(b, wire.AppendScanToken(tok[:0], r.Position))
	}
	return b
}

// scanReplySize is the length of the payload appendScanReply makes.
func scanReplySize(r *engine.Result) int {
	n := 64
	for _, k := range r.Keys {
		n += len(k) + 16
	}
	return n
}
