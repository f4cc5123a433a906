package broker

import (
	"strings"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/wire"
)

// binding is the broker's side of the core's interfaces (mqtt.Access,
// mqtt.PublishConsumer, mqtt.SessionEvents, mqtt.SubscriptionEvents and
// mqtt.RetainEvents): it binds the state store to the broker.
type binding struct {
	b *Broker
}

var (
	_ mqtt.Access             = (*binding)(nil)
	_ mqtt.PublishConsumer    = (*binding)(nil)
	_ mqtt.SessionEvents      = (*binding)(nil)
	_ mqtt.SubscriptionEvents = (*binding)(nil)
	_ mqtt.RetainEvents       = (*binding)(nil)
)

// install sets the binding as the core's interfaces; the retained
// messages are heard of only in a cluster, which replicates them.
func (h *binding) install(o *mqtt.Options) {
	o.Access = h
	o.Consumer = h
	o.Sessions = h
	o.Subscriptions = h
	if h.b.span != nil {
		o.Retained = h
	}
}

// Subscribed counts the subscriptions made, and has them in effect
// across the cluster before the SUBACK.
func (h *binding) Subscribed(cl *mqtt.Client, pk *packets.Packet, reasonCodes []byte) {
	h.b.metrics.traffic.subscribed(reasonCodes)
	if sp := h.b.span; sp != nil {
		sp.subscribed(cl, reasonCodes)
	}
}

// Unsubscribed replicates a session's subscriptions without those
// removed.
func (h *binding) Unsubscribed(cl *mqtt.Client, pk *packets.Packet) {
	if sp := h.b.span; sp != nil && !cl.Net.Inline {
		sp.replicateSubscriptions(cl, nil)
	}
}

// SessionEstablished records the session's connection in the cluster.
func (h *binding) SessionEstablished(cl *mqtt.Client) {
	if sp := h.b.span; sp != nil {
		sp.established(cl)
	}
}

// SessionEstablishing claims the client id in the cluster, and fetches a
// session the connection resumes from the node that held it, before the
// core takes over a local session.
func (h *binding) SessionEstablishing(cl *mqtt.Client, pk *packets.Packet) {
	if sp := h.b.span; sp != nil {
		sp.connect(cl, pk)
	}
}

// Retained puts a retained message (or its clear) in the cluster's
// replicated state.
func (h *binding) Retained(cl *mqtt.Client, pk *packets.Packet) {
	h.b.span.retained(cl, pk)
}

// SessionExpired forgets a session that expired.
func (h *binding) SessionExpired(cl *mqtt.Client) {
	if sp := h.b.span; sp != nil {
		sp.expired(cl)
	}
}

// Connect authenticates a client when authentication is on; a refusal
// is a reason code, which the CONNACK carries.
func (h *binding) Connect(cl *mqtt.Client, pk *packets.Packet) error {
	if h.b.cfg.Auth == nil {
		return nil
	}
	if err := h.b.authenticate(cl, pk); err != nil {
		return err
	}
	if sp := h.b.span; sp != nil {
		return sp.mayConnect(cl)
	}
	return nil
}

// Allow decides publishes, subscriptions and deliveries. No client
// may publish under the state store's reserved prefix (so none can forge
// a notification); with authentication, isolation and the policy decide
// the rest (see access). A publish to the request topic is always
// admitted: the policy governs the keys of the requests.
func (h *binding) Allow(cl *mqtt.Client, topic string, write bool) bool {
	a := accessOf(cl)
	if write {
		if topic == wire.RequestTopic {
			return true
		}
		if !cl.Net.Inline && strings.HasPrefix(topic, wire.ReservedPrefix) {
			h.b.metrics.Refused.WithLabelValues("reserved topic").Inc()
			return false
		}
		return a == nil || a.mayPublish(topic)
	}
	return a == nil || a.mayRead(topic)
}

// ConsumePublish takes requests to the state store out of the broker's
// routing; the core hands them over by pointer, without copies of the
// packet on the reader's stack.
func (h *binding) ConsumePublish(cl *mqtt.Client, pk *packets.Packet) error {
	if cl.Net.Inline || pk.TopicName != wire.RequestTopic {
		return nil
	}
	h.b.handleRequest(cl, pk)
	// The request is answered; the broker must neither route nor
	// acknowledge it.
	return errHandled
}

// errHandled tells the broker core that the binding took care of a
// publish; boxed once, as an error value would otherwise be per request.
var errHandled error = packets.ErrRejectPacket

// Disconnected drops the connection's KEYNOTIFY registrations.
func (h *binding) Disconnected(cl *mqtt.Client, err error, expire bool) {
	h.b.watches.dropConnection(cl)
	if sp := h.b.span; sp != nil {
		sp.disconnected(cl, expire)
	}
}
