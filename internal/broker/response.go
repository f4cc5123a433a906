package broker

import (
	"slices"
	"strconv"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// complete sends the response of a finished request. It is the Done of
// every op the binding submits.
func (b *Broker) complete(op *engine.Op) {
	c := op.Caller.(*call)
	r := &op.Result
	var payload []byte
	switch {
	case r.Err != nil:
		b.metrics.Errors.WithLabelValues(r.Err.Text()).Inc()
		payload = resp.AppendError(make([]byte, 0, 6+len(r.Err.Text())), "ERR "+r.Err.Text())
	case op.Request.Verb == wire.VerbGet:
		if r.Found {
			payload = resp.AppendBulk(make([]byte, 0, len(r.Value)+16), r.Value)
		} else {
			payload = replyNull
		}
	case op.Request.Verb == wire.VerbKeyInfo:
		if r.Found {
			payload = appendKeyInfoReply(r)
		} else {
			payload = replyNull
		}
	case op.Request.Verb == wire.VerbScan:
		payload = appendScanReply(make([]byte, 0, scanReplySize(r)), r)
	case op.Request.Verb == wire.VerbKeyNotify:
		if op.Request.Stop && !r.Watched {
			payload = replyZero
		} else {
			payload = replyOK
		}
	case op.Request.Verb == wire.VerbSet && r.Outcome == store.Applied:
		payload = replyOK
	case r.Outcome == store.Applied:
		payload = replyOne
	case r.Outcome == store.NotMet:
		payload = replyNotMet
	default: // store.Missing
		payload = replyZero
	}
	user := okNoVersion
	if r.HasVersion && r.Err == nil {
		user = c.versioned(r.Version)
	}
	if r.TTL > 0 && r.Err == nil {
		// Rare (asked for, and a key that expires): its own slice, not
		// the reply's.
		user = append(slices.Clip(user), packets.UserProperty{Key: wire.PropTTL, Val: strconv.FormatInt(r.TTL, 10)})
	}
	b.respond(c, payload, user, op.Inline)
	c.release()
}

// The payloads of responses that are not a value or an error. The broker
// only reads a packet's payload, so every response may share them; Clip
// keeps an append from writing into them.
var (
	replyOK     = slices.Clip(resp.AppendSimple(nil, "OK"))
	replyNull   = slices.Clip(resp.AppendNull(nil))
	replyZero   = slices.Clip(resp.AppendInt(nil, 0))
	replyOne    = slices.Clip(resp.AppendInt(nil, 1))
	replyNotMet = slices.Clip(resp.AppendInt(nil, -1))
)

// okNoVersion is the envelope of a response without a version, shared
// like the payloads above.
var okNoVersion = []packets.UserProperty{
	{Key: wire.PropStatus, Val: wire.StatusOK},
	{Key: wire.PropProtocolVersion, Val: wire.ProtocolVersion},
}

// respondUnsupportedVersion answers a request of an RPC protocol major
// version the server does not speak.
func (b *Broker) respondUnsupportedVersion(c *call, version string) {
	b.metrics.Refused.WithLabelValues("protocol version").Inc()
	b.respond(c, nil, []packets.UserProperty{
		{Key: wire.PropStatus, Val: wire.StatusVersionNotSupported},
		{Key: wire.PropStatusMessage, Val: "RPC protocol version " + version + " is not supported"},
		{Key: wire.PropProtocolVersion, Val: wire.ProtocolVersion},
		{Key: wire.PropSupportedMajor, Val: wire.SupportedMajor},
		{Key: wire.PropRequestProtocol, Val: version},
	}, true)
	c.release()
}

// respond publishes a response with the PUBACK of its request: in one
// write when the requester subscribed to its response topic. now says
// that the caller is the requester's reader goroutine (the result was
// ready at once); otherwise it is the goroutine that delivers results
// after the journal, which must not wait for any one connection (see
// publishWithAck).
func (b *Broker) respond(c *call, payload []byte, user []packets.UserProperty, now bool) {
	b.metrics.traffic.observeRequest(c.op.Request.Verb, time.Since(c.start))
	// The packets are built in the call (zero since newCall), not on this
	// goroutine's stack: 800 bytes each, they grew the stack of every
	// connection. The broker copies what it keeps of them.
	pk := &c.response
	pk.FixedHeader.Qos = 1
	pk.TopicName = c.responseTopic
	pk.Payload = payload
	pk.Properties.CorrelationData = c.correlation
	pk.Properties.ContentType = wire.ContentType
	pk.Properties.User = user
	ack := &c.ack
	ack.FixedHeader.Type = packets.Puback
	ack.PacketID = c.packetID
	if b.publishWithAck(pk, c.client, ack, now, c.reply) {
		c.reply.Release()
	}
}
