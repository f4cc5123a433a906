// SPDX-License-Identifier: MIT

package mqtt

import "github.com/dssio/dss/internal/mqtt/packets"

// dss: the application's part in the broker is a few small interfaces,
// each set in Options (Access, Consumer, Sessions, Subscriptions,
// Retained), in place of upstream's hook of 37 methods, whose events were
// asked for by every hook at every packet. A field left nil is an event
// nobody hears, except Access: without it every connection is refused
// (fail closed, as upstream without an authentication hook).
//
// Every method is called on the goroutine of the connection the event is
// about (the one that reads it, or ends it), except where its comment
// says otherwise; none may block for long, as the connection's packets
// wait.

// Access decides who may connect and which topics a client may publish
// to and receive from.
type Access interface {
	// Connect decides whether cl, whose CONNECT pk is, may connect: nil
	// admits it; a packets.Code at or above 0x80 refuses it and is the
	// CONNACK's reason code; another error refuses it without a CONNACK.
	Connect(cl *Client, pk *packets.Packet) error
	// Allow reports whether cl may publish to topic (write), or receive
	// from the topic or filter topic (!write). It is called for every
	// publish, subscription and delivery, from any goroutine.
	Allow(cl *Client, topic string, write bool) bool
}

// PublishConsumer takes the publishes the application handles itself out
// of the broker's routing, after the broker's checks (Access among them).
type PublishConsumer interface {
	// ConsumePublish sees every publish a client sends. It returns
	// packets.ErrRejectPacket for a publish it took care of, which the
	// broker then neither routes nor acknowledges; packets.CodeSuccessIgnore
	// for one acknowledged but not routed; a packets.Code to refuse it with
	// (in the acknowledgement of an MQTT 5 publish with QoS above 0); nil
	// to route it. It may change pk in place; pk is valid until it
	// returns.
	ConsumePublish(cl *Client, pk *packets.Packet) error
}

// SessionEvents hears of sessions that begin, end their connection and
// expire.
type SessionEvents interface {
	// SessionEstablishing is called once cl's CONNECT pk is admitted,
	// before cl takes over an earlier session of its client id.
	SessionEstablishing(cl *Client, pk *packets.Packet)
	// SessionEstablished is called once cl has its CONNACK and its
	// session's messages were sent again.
	SessionEstablished(cl *Client)
	// Disconnected is called when cl's connection ended, because of err
	// (nil for a DISCONNECT); expire tells that its session ends with it.
	Disconnected(cl *Client, err error, expire bool)
	// SessionExpired is called when cl's session, without a connection,
	// expired, on the goroutine of the server's sweeps.
	SessionExpired(cl *Client)
}

// SubscriptionEvents hears of subscriptions made and removed.
type SubscriptionEvents interface {
	// Subscribed is called once the filters of the SUBSCRIBE pk are
	// subscribed to, with the reason code of each.
	Subscribed(cl *Client, pk *packets.Packet, reasonCodes []byte)
	// Unsubscribed is called once the filters of pk, an UNSUBSCRIBE (or
	// the filters a session from elsewhere no longer holds, see
	// remote.go), are removed.
	Unsubscribed(cl *Client, pk *packets.Packet)
}

// RetainEvents hears of retained messages set and cleared by clients.
type RetainEvents interface {
	// Retained is called when the publish pk of cl is retained, or
	// clears its topic's retained message (an empty payload).
	Retained(cl *Client, pk *packets.Packet)
}

// allowed asks Options.Access whether cl may publish to (write) or
// receive from topic; without an Access, nobody may.
func (o *Options) allowed(cl *Client, topic string, write bool) bool {
	return o.Access != nil && o.Access.Allow(cl, topic, write)
}
