package attach

import (
	"strings"

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
		a.refuse("qos 0", "state store requests must be sent with QoS 1", props.ResponseTopic)
		return
	case props.ResponseTopic == "":
		a.refuse("no response topic", "state store request without Response Topic", "")
		return
	case len(props.CorrelationData) == 0:
		a.refuse("no correlation data", "state store request without Correlation Data", props.ResponseTopic)
		return
	case wire.ForbiddenResponseTopic(props.ResponseTopic):
		a.refuse("forbidden response topic", "the Response Topic of a state store request may not be the request topic or under "+wire.ReservedPrefix, props.ResponseTopic)
		return
	case strings.ContainsAny(props.ResponseTopic, "+#"):
		a.refuse("wildcard response topic", "state store request with a wildcard in its Response Topic", props.ResponseTopic)
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
		a.refuse("shutting down", "the state store is shutting down", c.responseTopic)
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
	a.metrics.Requests.WithLabelValues(verb.String()).Inc()
	if verb == wire.VerbKeys {
		a.listKeys(c)
		return
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
		a.respond(c, earlier.payload, earlier.props)
	default:
		a.metrics.Duplicates.WithLabelValues("answered again").Inc()
		a.recent.forget(c.key)
		a.recent.begin(c.key)
		return true
	}
	return false
}

// refuse counts and logs a request that is not carried out. There is
// nobody to tell: the broker acknowledged it to its sender, and without a
// usable response topic and correlation data no response can be sent.
func (a *Attacher) refuse(reason, text, responseTopic string) {
	a.metrics.Refused.WithLabelValues(reason).Inc()
	if a.refuseLog.Allow() {
		a.log.Warn("state store request refused", "reason", text, "response_topic", responseTopic)
	}
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
	props := service.Properties(r.Version, service.HasVersion(op))
	a.recent.finish(c.key, op.Request.Verb, r.Err, payload, props)
	a.respond(c, payload, props)
}

// respond publishes a response: QoS 1 on the request's response topic,
// with its correlation data, content type application/octet-stream and
// the user properties props, as dss serve sends it.
func (a *Attacher) respond(c *call, payload []byte, props []service.Property) {
	user := make(paho.UserProperties, len(props))
	for i, p := range props {
		user[i] = paho.UserProperty{Key: p.Key, Value: p.Value}
	}
	a.publish(&paho.Publish{
		QoS:     1,
		Topic:   c.responseTopic,
		Payload: payload,
		Properties: &paho.PublishProperties{
			CorrelationData: c.correlation,
			ContentType:     wire.ContentType,
			User:            user,
		},
	})
}

// listKeys answers a KEYS request on a goroutine of its own: the listing
// reads every key.
func (a *Attacher) listKeys(c *call) {
	kl, ok := a.store.(service.KeyLister)
	if !ok {
		a.answerNow(c, wire.ErrUnknownCommand)
		return
	}
	select {
	case a.listingSlots <- struct{}{}:
	default:
		a.answerNow(c, wire.ErrBusy)
		return
	}
	q := service.KeysQuery(&c.op.Request, nil)
	c.op.Request = wire.Request{Verb: wire.VerbKeys}
	a.workers.Add(1)
	go func() {
		defer a.workers.Done()
		defer func() { <-a.listingSlots }()
		payload, err := service.ListKeys(a.ctx, kl, q)
		if err != nil {
			c.op.Result.Err = err
			a.complete(&c.op)
			return
		}
		props := service.Properties(c.op.Result.Version, false)
		a.recent.finish(c.key, wire.VerbKeys, nil, nil, nil)
		a.respond(c, payload, props)
	}()
}

// answerNow answers c with a protocol error.
func (a *Attacher) answerNow(c *call, err *wire.Error) {
	c.op.Result.Err = err
	c.op.Inline = true
	a.complete(&c.op)
}
