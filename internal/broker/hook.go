package broker

import (
	"strings"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/wire"
)

// hook is the broker hook that binds the state store to the broker.
type hook struct {
	mqtt.HookBase
	b *Broker
}

func (h *hook) ID() string { return "dss-statestore" }

func (h *hook) Provides(b byte) bool {
	// The broker asks this for every hook at every event of every packet.
	switch b {
	case mqtt.OnConnect:
		return h.b.cfg.Auth != nil
	case mqtt.OnSessionEstablish, mqtt.OnRetainMessage, mqtt.OnClientExpired:
		return h.b.span != nil
	case mqtt.OnConnectAuthenticate,
		mqtt.OnACLCheck,
		mqtt.OnPublish,
		mqtt.OnDisconnect,
		mqtt.OnSubscribed,
		mqtt.OnUnsubscribed,
		mqtt.OnSessionEstablished:
		return true
	}
	return false
}

// OnSubscribed, OnUnsubscribed and OnSessionEstablished (which may inherit
// an earlier session's subscriptions) change who receives what.
func (h *hook) OnSubscribed(cl *mqtt.Client, pk packets.Packet, reasonCodes []byte) {
	h.b.routes.invalidate()
	h.b.metrics.traffic.subscribed(reasonCodes)
	if sp := h.b.span; sp != nil {
		sp.subscribed(cl, reasonCodes)
	}
}

func (h *hook) OnUnsubscribed(cl *mqtt.Client, pk packets.Packet) {
	h.b.routes.invalidate()
	if sp := h.b.span; sp != nil && !cl.Net.Inline {
		sp.replicateSubscriptions(cl, nil)
	}
}

func (h *hook) OnSessionEstablished(cl *mqtt.Client, pk packets.Packet) {
	h.b.routes.invalidate()
	if sp := h.b.span; sp != nil {
		sp.established(cl)
	}
}

// OnSessionEstablish claims the client id in the cluster, and fetches a
// session the connection resumes from the node that held it, before the
// core takes over a local session.
func (h *hook) OnSessionEstablish(cl *mqtt.Client, pk packets.Packet) { h.b.span.connect(cl, &pk) }

// OnRetainMessage puts a retained message (or its clear) in the cluster's
// replicated state.
func (h *hook) OnRetainMessage(cl *mqtt.Client, pk packets.Packet, r int64) {
	h.b.span.retained(cl, &pk)
}

// OnClientExpired forgets a session that expired.
func (h *hook) OnClientExpired(cl *mqtt.Client) { h.b.span.expired(cl) }

// OnConnect authenticates a client when authentication is on; a refusal
// is a reason code, which the CONNACK carries.
func (h *hook) OnConnect(cl *mqtt.Client, pk packets.Packet) error {
	if err := h.b.authenticate(cl, &pk); err != nil {
		return err
	}
	if sp := h.b.span; sp != nil {
		return sp.mayConnect(cl)
	}
	return nil
}

// OnConnectAuthenticate admits every client OnConnect admitted.
func (h *hook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool { return true }

// OnACLCheck decides publishes, subscriptions and deliveries. No client
// may publish under the state store's reserved prefix (so none can forge
// a notification); with authentication, isolation and the policy decide
// the rest (see access). A publish to the request topic is always
// admitted: the policy governs the keys of the requests.
func (h *hook) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
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

// OnPublish takes requests to the state store out of the broker's routing.
func (h *hook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	return pk, h.ConsumePublish(cl, &pk)
}

// ConsumePublish is OnPublish by pointer: the broker core hands
// requests over this way (mqtt.PublishConsumer), without copies of the
// packet on the reader's stack.
func (h *hook) ConsumePublish(cl *mqtt.Client, pk *packets.Packet) error {
	if cl.Net.Inline || pk.TopicName != wire.RequestTopic {
		return nil
	}
	h.b.handleRequest(cl, pk)
	// The request is answered; the broker must neither route nor
	// acknowledge it.
	return errHandled
}

// errHandled tells the broker core that the hook took care of a
// publish; boxed once, as an error value would otherwise be per request.
var errHandled error = packets.ErrRejectPacket

// OnDisconnect drops the connection's KEYNOTIFY registrations.
func (h *hook) OnDisconnect(cl *mqtt.Client, err error, expire bool) {
	h.b.watches.dropConnection(cl)
	if sp := h.b.span; sp != nil {
		sp.disconnected(cl, expire)
	}
}
