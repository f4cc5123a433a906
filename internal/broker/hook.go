package broker

import (
	"bytes"
	"strings"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/dssio/dss/internal/proto"
)

// hook is the broker hook that binds the state store to the broker.
type hook struct {
	mqtt.HookBase
	b *Broker
}

func (h *hook) ID() string { return "dss-statestore" }

func (h *hook) Provides(b byte) bool {
	return bytes.Contains([]byte{
		mqtt.OnConnectAuthenticate,
		mqtt.OnACLCheck,
		mqtt.OnPublish,
		mqtt.OnSessionEstablish,
		mqtt.OnDisconnect,
	}, []byte{b})
}

// OnSessionEstablish runs before the broker library looks for an earlier
// connection with the same client id. The library ends such a connection
// and, on the old connection's goroutine, then removes the client id's
// subscriptions and its entry in the client list, unless it noticed the
// takeover first. When the new connection registered in between, it loses
// both and never receives a message again. So end the old connection here
// and wait until its cleanup is done, before the new one is registered.
func (h *hook) OnSessionEstablish(cl *mqtt.Client, pk packets.Packet) {
	srv := h.b.srv
	old, ok := srv.Clients.Get(cl.ID)
	if !ok || old == cl || !sessionEndsWithConnection(old) {
		return
	}
	if !old.Closed() {
		_ = srv.DisconnectClient(old, packets.ErrSessionTakenOver)
	}
	deadline := time.Now().Add(takeoverWait)
	for {
		cur, ok := srv.Clients.Get(cl.ID)
		if !ok || cur != old {
			return
		}
		if time.Now().After(deadline) {
			h.b.log.Warn("earlier connection did not end in time; continuing with the takeover", "client", cl.ID)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// takeoverWait bounds how long a new connection waits for the cleanup of
// an earlier one with the same client id.
const takeoverWait = 5 * time.Second

// sessionEndsWithConnection reports whether the broker library discards
// the client's session when its connection ends.
func sessionEndsWithConnection(cl *mqtt.Client) bool {
	if cl.Properties.ProtocolVersion == 5 {
		return cl.Properties.Props.SessionExpiryInterval == 0
	}
	return cl.Properties.Clean
}

// OnConnectAuthenticate admits every client.
func (h *hook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool { return true }

// OnACLCheck keeps the state store's own topics to the state store: no
// client may publish under the reserved prefix, so no client can forge a
// notification.
func (h *hook) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	if write && !cl.Net.Inline && strings.HasPrefix(topic, proto.ReservedPrefix) {
		h.b.metrics.Refused.WithLabelValues("reserved topic").Inc()
		return false
	}
	return true
}

// OnPublish takes requests to the state store out of the broker's routing.
func (h *hook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if cl.Net.Inline || pk.TopicName != proto.RequestTopic {
		return pk, nil
	}
	h.b.handleRequest(cl, &pk)
	// The request is answered; the broker must neither route nor
	// acknowledge it.
	return pk, packets.ErrRejectPacket
}

// OnDisconnect drops the connection's KEYNOTIFY registrations.
func (h *hook) OnDisconnect(cl *mqtt.Client, err error, expire bool) {
	h.b.watches.dropConnection(cl)
}
