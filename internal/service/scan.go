package service

import (
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// scanReplyRoom is what a SCAN response takes beyond its keys' bytes:
// the fixed and variable headers, the response topic, correlation data
// and user properties of a response are well within it.
const scanReplyRoom = 8 << 10

// ScanPageBytes returns the bound of the keys of a SCAN page (for
// engine.Op.MaxReplyBytes) whose response must fit a packet of at most
// maxPacket bytes, with its response topic and correlation data of the
// given lengths; 0 (the engine's default) when maxPacket is 0, no limit.
// A response larger than the receiver's Maximum Packet Size would never
// reach it (MQTT 5, 3.1.2.11.4).
func ScanPageBytes(maxPacket, responseTopic, correlation int) int {
	if maxPacket <= 0 {
		return 0
	}
	return min(engine.ScanReplyBytes, max(maxPacket-scanReplyRoom-responseTopic-correlation, maxPacket/2))
}

// AppendScanReply appends the payload of a SCAN page: an array of the
// keys alone when it is the last page, or of the keys and the token of
// the next one.
//
//	*1\r\n*<N>\r\n<N bulk strings>                    last page
//	*2\r\n*<N>\r\n<N bulk strings>$<n>\r\n<token>\r\n   more follow
func AppendScanReply(b []byte, r *engine.Result) []byte {
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

// scanReplySize is the length of the payload AppendScanReply makes.
func scanReplySize(r *engine.Result) int {
	n := 64
	for _, k := range r.Keys {
		n += len(k) + 16
	}
	return n
}
