package broker

import (
	"slices"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/wire"
)

// complete sends the response of a finished request. It is the Done of
// every op the binding submits.
func (b *Broker) complete(op *engine.Op) {
	c := op.Caller.(*call)
	if err := op.Result.Err; err != nil {
		b.metrics.Errors.WithLabelValues(err.Text()).Inc()
	}
	user := okNoVersion
	if service.HasVersion(op) {
		user = c.versioned(op.Result.Version)
	}
	// A GET's value goes into the reply too, after the version's text.
	payload := service.PayloadIn(c.spare, op)
	if ttl, ok := service.TTLProperty(op); ok {
		// Rare (asked for, and a key that expires): its own slice, not
		// the reply's.
		user = append(slices.Clip(user), packets.UserProperty{Key: ttl.Key, Val: ttl.Value})
	}
	b.respond(c, payload, user, op.Inline)
	c.release()
}

// okNoVersion is the envelope of a response without a version, shared
// by every such response (the broker only reads it).
var okNoVersion = []packets.UserProperty{
	{Key: wire.PropStatus, Val: wire.StatusOK},
	{Key: wire.PropProtocolVersion, Val: wire.ProtocolVersion},
}

// respondUnsupportedVersion answers a request of an RPC protocol major
// version the server does not speak.
func (b *Broker) respondUnsupportedVersion(c *call, version string) {
	b.metrics.Refused.WithLabelValues("protocol version").Inc()
	props := service.UnsupportedVersion(version)
	user := make([]packets.UserProperty, len(props))
	for i, p := range props {
		user[i] = packets.UserProperty{Key: p.Key, Val: p.Value}
	}
	b.respond(c, nil, user, true)
	c.release()
}

// respond publishes a response with the PUBACK of its request: in one
// write when the requester subscribed to its response topic. now says
// that the caller is the requester's reader goroutine (the result was
// ready at once); otherwise it is the goroutine that delivers results
// after the journal, which must not wait for any one connection (see
// publishWithAck).
func (b *Broker) respond(c *call, payload []byte, user []packets.UserProperty, now bool) {
	// time.Since reads only the monotonic clock, half of time.Now's cost
	// on the request path; the response counts as created when its
	// request arrived, which Created's whole seconds cannot tell apart.
	b.metrics.traffic.Latency.Observe(c.op.Request.Verb, time.Since(c.start))
	// The packets are built in the call (zero since newCall), not on this
	// goroutine's stack: 800 bytes each, they grew the stack of every
	// connection. The broker copies what it keeps of them.
	pk := &c.response
	pk.FixedHeader.Qos = 1
	pk.Created = c.start.Unix()
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
