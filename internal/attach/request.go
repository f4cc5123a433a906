package attach

import (
	"strings"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/wire"
)

// call is one request from receipt to response.
type call struct {
	op            engine.Op
	a             *Attacher
	requester     string // the client id it names, "" for none
	responseTopic string
	correlation   []byte
	key           requestKey
	// payload is the request's, which op.Request refers to.
	payload []byte
	start   time.Time // arrival, for dss_request_duration_seconds
}

// handleRequest carries out a request, on paho's delivering goroutine:
// the requests that reach this instance are submitted in the order the
// broker sent them. The broker has them acknowledged when this returns
// (paho acknowledges each message once its handler ran): what dss took,
// it answers from its own state, whatever becomes of the connection.
func (a *Attacher) handleRequest(p *paho.Publish) {
	var props paho.PublishProperties
	if p.Properties != nil {
		props = *p.Properties
	}
	switch {
	case p.QoS == 0:
		// The broker takes QoS 0 requests without acknowledging anything
		// to their sender: the refusal is answered on the Response Topic.
		reason := service.NeedsQoS1(len(props.CorrelationData) > 0)
		a.refuse("qos 0", reason, props.ResponseTopic)
		a.tellRefused(&props, reason)
		return
	case props.ResponseTopic == "":
		a.refuse("no response topic", service.ReasonNoResponseTopic, "")
		return
	case len(props.CorrelationData) == 0:
		a.refuse("no correlation data", service.ReasonNoCorrelation, props.ResponseTopic)
		a.tellRefused(&props, service.ReasonNoCorrelation)
		return
	case wire.ForbiddenResponseTopic(props.ResponseTopic):
		a.refuse("forbidden response topic", service.ReasonForbiddenResponse, props.ResponseTopic)
		return
	case strings.ContainsAny(props.ResponseTopic, "+#"):
		a.refuse("wildcard response topic", service.ReasonWildcardResponse, props.ResponseTopic)
		return
	}
	var env service.Envelope
	for _, u := range props.User {
		env.Add(u.Key, u.Value)
	}
	c := &call{
		a:             a,
		requester:     requester(&env, props.ResponseTopic),
		responseTopic: props.ResponseTopic,
		correlation:   props.CorrelationData,
		payload:       p.Payload,
		start:         time.Now(),
	}
	who := c.requester
	if who == "" {
		// Who sent it is unknown; its response topic tells requests apart.
		who = "\x00" + c.responseTopic
	}
	c.key = a.recent.keyOf(who, c.correlation, c.payload, &env)

	a.drainMu.RLock()
	defer a.drainMu.RUnlock()
	if a.draining {
		a.refuse("shutting down", service.ReasonDraining, c.responseTopic)
		return
	}
	if earlier, seen := a.recent.begin(c.key); seen && !a.again(c, p, &earlier) {
		return
	}
	c.op.Caller = c
	c.op.Done = a.complete
	if !env.Supported() {
		a.metrics.Refused.WithLabelValues("protocol version").Inc()
		a.respond(c, nil, service.UnsupportedVersion(env.Version))
		a.recent.forget(c.key)
		return
	}
	if perr := service.Prepare(&c.op, c.payload, &env, a.limits, nil); perr != nil {
		c.op.Result = engine.Result{Err: perr}
		c.op.Inline = true
		a.complete(&c.op)
		return
	}
	// A cluster recognises a request sent again by these.
	c.op.Client, c.op.Correlation = who, c.correlation
	verb := c.op.Request.Verb
	a.metrics.Count(verb)
	if verb == wire.VerbScan {
		// A page must fit the largest packet the broker takes from dss;
		// the broker does not say what its requester takes.
		c.op.MaxReplyBytes = service.ScanPageBytes(int(a.maxPacket.Load()), len(c.responseTopic), len(c.correlation))
	}
	a.store.Submit(a.ctx, &c.op)
}

// again deals with a request that arrived before, and reports whether
// to carry it out again: once only is a request carried out and
// answered. The broker redelivers a request (DUP set) that dss had not
// acknowledged when its connection ended: its response, if any, went out
// already or is on its way. A client that sends it again itself lacks
// the response: a write's is sent again, anything else is carried out
// again.
func (a *Attacher) again(c *call, p *paho.Publish, earlier *entry) bool {
	switch {
	case !earlier.done:
		a.metrics.Duplicates.WithLabelValues("pending").Inc()
	case p.Duplicate():
		a.metrics.Duplicates.WithLabelValues("redelivery").Inc()
	case earlier.kept:
		a.metrics.Duplicates.WithLabelValues("answered again").Inc()
		// A replay: not carried out, so not timed as a request.
		a.publishResponse(c.responseTopic, c.correlation, earlier.payload, earlier.props)
	default:
		a.metrics.Duplicates.WithLabelValues("answered again").Inc()
		a.recent.forget(c.key)
		a.recent.begin(c.key)
		return true
	}
	return false
}

// refuse counts and logs a request that is not carried out. The broker
// acknowledged it to its sender already: a request without a usable
// response topic gets no answer at all, one without correlation data or
// sent with QoS 0 gets tellRefused's.
func (a *Attacher) refuse(reason, text, responseTopic string) {
	a.metrics.Refused.WithLabelValues(reason).Inc()
	if a.refuseLog.Allow() {
		a.log.Warn("state store request refused", "reason", text, "response_topic", responseTopic)
	}
}

// tellRefused answers a request refused for its envelope on its response
// topic, when it has a usable one, as dss serve does (service.Refusal).
func (a *Attacher) tellRefused(props *paho.PublishProperties, reason string) {
	if !service.MayAnswerOn(props.ResponseTopic) {
		return
	}
	payload, user := service.Refusal(reason)
	a.publishResponse(props.ResponseTopic, props.CorrelationData, payload, user)
}

// complete answers a finished request. It is the Done of every op the
// attacher submits.
func (a *Attacher) complete(op *engine.Op) {
	c := op.Caller.(*call)
	r := &op.Result
	if r.Err != nil {
		a.metrics.Errors.WithLabelValues(r.Err.Text()).Inc()
	}
	payload := service.Payload(op)
	props := service.Properties(op)
	a.recent.finish(c.key, op.Request.Verb, r.Err, payload, props)
	a.respond(c, payload, props)
}

// respond publishes the response to c and records its latency.
func (a *Attacher) respond(c *call, payload []byte, props []service.Property) {
	a.metrics.Latency.Observe(c.op.Request.Verb, time.Since(c.start))
	a.publishResponse(c.responseTopic, c.correlation, payload, props)
}

// publishResponse publishes a response: QoS 1 on the request's response
// topic, with its correlation data (if any), content type
// application/octet-stream and the user properties props, as dss serve
// sends it.
func (a *Attacher) publishResponse(topic string, correlation, payload []byte, props []service.Property) {
	user := make(paho.UserProperties, len(props))
	for i, p := range props {
		user[i] = paho.UserProperty{Key: p.Key, Value: p.Value}
	}
	a.publish(&paho.Publish{
		QoS:     1,
		Topic:   topic,
		Payload: payload,
		Properties: &paho.PublishProperties{
			CorrelationData: correlation,
			ContentType:     wire.ContentType,
			User:            user,
		},
	})
}
