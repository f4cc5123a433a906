package service

import (
	"slices"
	"strconv"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// Property is one user property of a response.
type Property struct {
	Key, Value string
}

// Payload returns the RESP3 payload of the response to a finished op. The
// payloads that are not a value, a listing or an error are shared by
// every response: the caller must not modify what it gets.
func Payload(op *engine.Op) []byte { return PayloadIn(nil, op) }

// PayloadIn is Payload, with a GET's value framed in room's spare
// capacity (from room[len(room)]) when it fits there, in memory of its
// own otherwise: a caller that holds memory for the response anyway
// saves an allocation per GET.
func PayloadIn(room []byte, op *engine.Op) []byte {
	r := &op.Result
	switch {
	case r.Err != nil:
		return resp.AppendError(make([]byte, 0, 6+len(r.Err.Text())), "ERR "+r.Err.Text())
	case op.Request.Verb == wire.VerbGet:
		if r.Found {
			dst := room[len(room):]
			if n := len(r.Value) + 16; cap(dst) < n {
				dst = make([]byte, 0, n)
			}
			return resp.AppendBulk(dst, r.Value)
		}
		return replyNull
	case op.Request.Verb == wire.VerbKeyInfo:
		if r.Found {
			return appendKeyInfoReply(r)
		}
		return replyNull
	case op.Request.Verb == wire.VerbScan:
		return AppendScanReply(make([]byte, 0, scanReplySize(r)), r)
	case op.Request.Verb == wire.VerbKeyNotify:
		if op.Request.Stop && !r.Watched {
			return replyZero
		}
		return replyOK
	case op.Request.Verb == wire.VerbSet && r.Outcome == store.Applied:
		return replyOK
	case r.Outcome == store.Applied:
		return replyOne
	case r.Outcome == store.NotMet:
		return replyNotMet
	default: // store.Missing
		return replyZero
	}
}

// The payloads of responses that are not a value or an error. A front
// end only reads a packet's payload, so every response may share them;
// Clip keeps an append from writing into them.
var (
	replyOK     = slices.Clip(resp.AppendSimple(nil, "OK"))
	replyNull   = slices.Clip(resp.AppendNull(nil))
	replyZero   = slices.Clip(resp.AppendInt(nil, 0))
	replyOne    = slices.Clip(resp.AppendInt(nil, 1))
	replyNotMet = slices.Clip(resp.AppendInt(nil, -1))
)

// HasVersion reports whether the response to a finished op carries its
// result's version as __ts: exactly when the result has one and is not
// an error.
func HasVersion(op *engine.Op) bool {
	return op.Result.HasVersion && op.Result.Err == nil
}

// TTLProperty returns the dss-ttl user property of the response to a
// finished op, and whether it has one: a GET that asked for it (dss-ttl:
// true) of a key that expires. It is the last property of the response.
func TTLProperty(op *engine.Op) (Property, bool) {
	r := &op.Result
	if r.TTL <= 0 || r.Err != nil {
		return Property{}, false
	}
	return Property{Key: wire.PropTTL, Value: strconv.FormatInt(r.TTL, 10)}, true
}

// Properties returns the user properties of the response to a finished
// op, in their order: __stat 200, __protVer, __ts when HasVersion, and
// dss-ttl when TTLProperty has one.
func Properties(op *engine.Op) []Property {
	props := make([]Property, 2, 4)
	props[0] = Property{Key: wire.PropStatus, Value: wire.StatusOK}
	props[1] = Property{Key: wire.PropProtocolVersion, Value: wire.ProtocolVersion}
	if HasVersion(op) {
		props = append(props, Property{Key: wire.PropTimestamp, Value: op.Result.Version.String()})
	}
	if ttl, ok := TTLProperty(op); ok {
		props = append(props, ttl)
	}
	return props
}

// UnsupportedVersion returns the user properties of the response to a
// request of an RPC protocol major version the store does not speak
// (version, its __protVer); the response has no payload.
func UnsupportedVersion(version string) []Property {
	return []Property{
		{Key: wire.PropStatus, Value: wire.StatusVersionNotSupported},
		{Key: wire.PropStatusMessage, Value: "RPC protocol version " + version + " is not supported"},
		{Key: wire.PropProtocolVersion, Value: wire.ProtocolVersion},
		{Key: wire.PropSupportedMajor, Value: wire.SupportedMajor},
		{Key: wire.PropRequestProtocol, Value: version},
	}
}
