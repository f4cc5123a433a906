package broker

import (
	"strings"
	"sync"
	"time"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/wire"
)

// call is one request from receipt to response. Calls are recycled once
// the response is handed to the broker, so nothing of a response may
// point into its call: the broker keeps a QoS 1 response until the client
// acknowledges it, and resends it after a reconnect.
//
// Nor may anything outlive the request that points into it: the
// connection reads its next packet into the request's memory (see
// ConsumedTopic in broker.go). What the response needs of the request is
// copied to its reply.
type call struct {
	op            engine.Op
	b             *Broker
	client        *mqtt.Client
	packetID      uint16 // of the request, for its PUBACK
	reply         *reply
	responseTopic string // in reply
	correlation   []byte // in reply
	spare         []byte // the room left in reply, for the version's text and a GET's value
	// response and ack are the response and the request's PUBACK while
	// they are handed to the broker.
	response, ack packets.Packet
	start         time.Time // arrival, for dss_request_duration_seconds
}

var calls = sync.Pool{New: func() any { return new(call) }}

func newCall(b *Broker, cl *mqtt.Client, pk *packets.Packet) *call {
	c := calls.Get().(*call) // zero: release leaves it so
	c.b, c.client, c.packetID, c.start = b, cl, pk.PacketID, time.Now()
	// Counted until answered: at MaxInflightPerClient the broker stops
	// reading the client's connection (see Config).
	cl.BeginPending()
	c.keep(pk.Properties.ResponseTopic, pk.Properties.CorrelationData)
	c.op.Caller = c
	c.op.Done = b.completeFn
	return c
}

// release recycles c once its response is out of its hands. A call used
// after it would find its fields zero.
func (c *call) release() {
	if c.client != nil {
		c.client.EndPending()
	}
	*c = call{}
	calls.Put(c)
}

// Reason codes the binding sends. Every one is valid in the packet it is
// sent in (MQTT 5, sections 3.4.2.1, 3.5.2.1 and 3.14.2.1).
var (
	codeMissingResponseTopic = packets.Code{Code: 0x83, Reason: service.ReasonNoResponseTopic}
	codeMissingCorrelation   = packets.Code{Code: 0x83, Reason: service.ReasonNoCorrelation}
	codeWildcardResponse     = packets.Code{Code: 0x83, Reason: service.ReasonWildcardResponse}
	codeNeedsQoS1            = packets.Code{Code: 0x83, Reason: service.ReasonNeedsQoS1}
	codeNeedsQoS1Correlation = packets.Code{Code: 0x83, Reason: service.ReasonNeedsQoS1Correlation}
	codeDraining             = packets.Code{Code: 0x80, Reason: service.ReasonDraining}
	codeForbiddenResponse    = packets.Code{Code: 0x83, Reason: service.ReasonForbiddenResponse}
)

// handleRequest runs on the client's read goroutine, so a client's
// requests are submitted in the order it sent them.
func (b *Broker) handleRequest(cl *mqtt.Client, pk *packets.Packet) {
	props := &pk.Properties
	switch {
	case pk.FixedHeader.Qos == 0:
		// There is nothing to acknowledge: count, log, and answer on the
		// Response Topic if there is one (see tellRefused).
		b.refuse(cl, "qos 0", codeNeedsQoS1)
		b.tellRefused(cl, pk, needsQoS1(props))
		return
	case pk.FixedHeader.Qos == 2:
		b.refuse(cl, "qos 2", codeNeedsQoS1)
		b.ack(cl, pk, packets.Pubrec, needsQoS1(props))
		b.tellRefused(cl, pk, needsQoS1(props))
		return
	case props.ResponseTopic == "":
		b.refuse(cl, "no response topic", codeMissingResponseTopic)
		b.ack(cl, pk, packets.Puback, codeMissingResponseTopic)
		return
	case len(props.CorrelationData) == 0:
		b.refuse(cl, "no correlation data", codeMissingCorrelation)
		b.ack(cl, pk, packets.Puback, codeMissingCorrelation)
		b.tellRefused(cl, pk, codeMissingCorrelation)
		return
	case wire.ForbiddenResponseTopic(props.ResponseTopic):
		b.refuse(cl, "forbidden response topic", codeForbiddenResponse)
		b.metrics.Disconnects.Inc()
		_ = b.srv.DisconnectClient(cl, codeForbiddenResponse)
		return
	case packets.HasWildcard(props.ResponseTopic):
		b.refuse(cl, "wildcard response topic", codeWildcardResponse)
		b.ack(cl, pk, packets.Puback, codeWildcardResponse)
		return
	}
	b.drainMu.RLock()
	defer b.drainMu.RUnlock()
	if b.draining {
		b.refuse(cl, "shutting down", codeDraining)
		b.ack(cl, pk, packets.Puback, codeDraining)
		return
	}
	// The store is the receiver of the request: it is accepted (PUBACK
	// 0x00), whether or not anyone subscribes to the topic. The PUBACK goes
	// out with the response.
	c := newCall(b, cl, pk)

	var env service.Envelope
	for _, u := range props.User {
		env.Add(u.Key, u.Val)
	}
	if !env.Supported() {
		b.respondUnsupportedVersion(c, strings.Clone(env.Version))
		return
	}
	perr := service.Prepare(&c.op, pk.Payload, &env, b.limits, func(req *wire.Request) bool { return mayRequest(cl, req) })
	if perr != nil {
		c.op.Result = engine.Result{Err: perr}
		c.op.Inline = true
		b.complete(&c.op)
		return
	}
	req := &c.op.Request
	// A cluster recognises a request sent again by these; both live as
	// long as the call.
	c.op.Client, c.op.Correlation = cl.ID, c.correlation
	b.metrics.Count(req.Verb)
	if req.Verb == wire.VerbScan {
		prepareScan(c)
	}
	// When the result is not ready at once (it waits for the journal, or
	// for earlier deliveries), the PUBACK goes out later with the response.
	b.store.Submit(b.ctx, &c.op)
}

// ack acknowledges a request with a reason code of the binding's choice.
func (b *Broker) ack(cl *mqtt.Client, pk *packets.Packet, typ byte, code packets.Code) {
	ack := packets.Packet{
		FixedHeader: packets.FixedHeader{Type: typ},
		PacketID:    pk.PacketID,
		ReasonCode:  code.Code,
	}
	if code.Code >= packets.ErrUnspecifiedError.Code {
		ack.Properties.ReasonString = code.Reason
	}
	if err := cl.Write(&ack); err != nil {
		b.log.Debug("acknowledgement not sent", "client", cl.ID, "err", err)
	}
}

// refuse counts and logs a request that is not executed.
func (b *Broker) refuse(cl *mqtt.Client, reason string, code packets.Code) {
	b.metrics.Refused.WithLabelValues(reason).Inc()
	if b.refuseLog.Allow() {
		b.log.Warn("state store request refused", "client", cl.ID, "remote", cl.Net.Remote, "reason", code.Reason)
	}
}

// mayRequest reports whether cl may make the request: always without
// authentication, otherwise as the policy grants.
func mayRequest(cl *mqtt.Client, req *wire.Request) bool {
	a := accessOf(cl)
	return a == nil || a.mayRequest(req)
}
