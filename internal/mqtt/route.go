// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"errors"
	"sort"
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// publishToSubscribers publishes a publish packet to all subscribers with matching topic filters.
//
// dss: it returns a subscriber that could not take the message yet (it
// was parked), for its publisher to wait for (see backpressure.go); nil
// if none.
func (s *Server) publishToSubscribers(pk packets.Packet) (congested *Client) {
	if pk.Ignore {
		return nil
	}
	s.stampRouted(&pk)
	return s.routeLocal(pk, s.remoteRoute(&pk)) // dss: and to the other nodes of a cluster
}

// stampRouted sets when a message routed from here was created and
// expires, if not set yet.
func (s *Server) stampRouted(pk *packets.Packet) {
	if pk.Created == 0 {
		pk.Created = time.Now().Unix()
	}

	if pk.Expiry == 0 {
		if expiry := minimum(s.Options.Capabilities.MaximumMessageExpiryInterval,
			int64(pk.Properties.MessageExpiryInterval)); expiry > 0 {
			pk.Expiry = pk.Created + expiry
		}
	}
	if pk.Expires == 0 {
		s.setExpires(pk, time.Now())
	}
}

// routeLocal delivers pk to the subscribers of this server; r, if not nil,
// decides which shared subscriptions are served here (dss). It returns a
// subscriber that could not take the message yet, as publishToSubscribers
// does.
func (s *Server) routeLocal(pk packets.Packet, r Routed) (congested *Client) {
	subscribers := s.Topics.Subscribers(pk.TopicName)
	if len(subscribers.Shared) > 0 {
		keepServed(subscribers, r)
	}
	if len(subscribers.Shared) > 0 {
		subscribers.SelectShared()
		subscribers.MergeSharedSelected()
	}

	for _, inlineSubscription := range subscribers.InlineSubscriptions {
		inlineSubscription.Handler(s.inlineClient, inlineSubscription.Subscription, pk)
	}

	for id, subs := range subscribers.Subscriptions {
		if cl, ok := s.Clients.Get(id); ok {
			out, err := s.publishToClient(cl, subs, pk)
			for errors.Is(err, errSessionMoved) && cl.State.successor.Load() != nil {
				cl = cl.State.successor.Load() // dss: the session's connection now
				out, err = s.publishToClient(cl, subs, pk)
			}
			if err != nil {
				s.Log.Debug("failed publishing packet", "error", err, "client", cl.ID, "packet", pk)
			} else if out.Expiry < 0 && congested == nil {
				congested = cl // parked
			}
		}
	}
	return congested
}

func (s *Server) publishToClient(cl *Client, sub packets.Subscription, pk packets.Packet) (packets.Packet, error) {
	out := new(packets.Packet)
	*out = pk.Copy(false)
	send, err := s.PrepareDelivery(cl, sub, out)
	if !send || err != nil {
		return *out, err
	}
	ret := *out // the write loop changes *out once it is queued
	return ret, s.enqueue(cl, out, nil)
}

// PublishToClient delivers pk to cl as routing does for a subscription
// sub of cl that matches pk's topic: it is written by the client's write
// loop. pk's properties are shared with the queued copy, not copied.
//
// dss: exported so that the state store can deliver a response to the
// subscribers of its response topic without the topic trie scan.
func (s *Server) PublishToClient(cl *Client, sub packets.Subscription, pk *packets.Packet) error {
	out := new(packets.Packet)
	*out = *pk
	send, err := s.PrepareDelivery(cl, sub, out)
	if !send || err != nil {
		return err
	}
	return s.enqueue(cl, out, nil)
}

// WriteDelivery sends out, a delivery PrepareDelivery made ready, to cl,
// with ack (if not nil) just before it, in one write: at once if cl's
// write loop has nothing to do (see Client.WriteNow for wait), otherwise
// through the write loop, after what it holds. It reports whether ack
// was written or queued; when it was not, the caller must see to it.
// Neither packet is kept: the queue gets copies.
//
// dss: the state store answers a request with its PUBACK and response
// from the goroutine that has the result, without waking a write loop.
func (s *Server) WriteDelivery(cl *Client, out, ack *packets.Packet, wait bool) (bool, error) {
	var written bool
	var err error
	if ack != nil {
		written, err = cl.WriteNow(wait, ack, out)
	} else {
		written, err = cl.WriteNow(wait, out)
	}
	switch {
	case written:
		return ack != nil, err // an error here is the connection's: nothing to retry
	case err != nil:
		return false, err
	}
	return s.enqueueCopies(cl, out, ack)
}

// enqueueCopies queues copies of out and ack for cl's write loop.
func (s *Server) enqueueCopies(cl *Client, out, ack *packets.Packet) (bool, error) {
	queued := new(packets.Packet)
	*queued = *out
	var queuedAck *packets.Packet
	if ack != nil {
		queuedAck = new(packets.Packet)
		*queuedAck = *ack
	}
	if err := s.enqueue(cl, queued, queuedAck); err != nil {
		return false, err
	}
	return ack != nil, nil
}

// PrepareDelivery does for a delivery of out to cl through the subscription
// sub what routing does before the write: the no-local rule, the ACL
// check, the retain flag, subscription identifiers, the QoS, the topic
// alias, the packet identifier and the inflight entry. It changes out in
// place into the packet to write, and reports whether it is to be written
// now (false for no-local, or when the client's send quota is exhausted:
// the packet is then parked and sent later).
//
// dss: split out of publishToClient so that the state store can write a
// response together with the PUBACK of its request, in one write.
func (s *Server) PrepareDelivery(cl *Client, sub packets.Subscription, out *packets.Packet) (bool, error) {
	if sub.NoLocal && out.Origin == cl.ID {
		return false, nil // [MQTT-3.8.3-3]
	}

	if !s.Options.allowed(cl, out.TopicName, false) {
		return false, packets.ErrNotAuthorized
	}
	return s.PrepareCheckedDelivery(cl, sub, out)
}

// CheckACL asks Options.Access whether cl may publish on topic (write) or
// receive it (read).
//
// dss: so that the state store can check the topic of a requester's own
// response route once, when the route is made.
func (s *Server) CheckACL(cl *Client, topic string, write bool) bool {
	return s.Options.allowed(cl, topic, write)
}

// PrepareCheckedDelivery is PrepareDelivery for a delivery whose topic
// the caller had CheckACL check for cl already: Options.Access is not
// asked again.
//
// dss: a state store response on the requester's own route, checked when
// the route was made, costs no ACL check per response.
func (s *Server) PrepareCheckedDelivery(cl *Client, sub packets.Subscription, out *packets.Packet) (bool, error) {
	if sub.NoLocal && out.Origin == cl.ID {
		return false, nil // [MQTT-3.8.3-3]
	}
	if !sub.FwdRetainedFlag && ((cl.Properties.ProtocolVersion == 5 && !sub.RetainAsPublished) || cl.Properties.ProtocolVersion < 5) { // ![MQTT-3.3.1-13] [v3 MQTT-3.3.1-9]
		out.FixedHeader.Retain = false // [MQTT-3.3.1-12]
	}

	if len(sub.Identifiers) > 0 { // [MQTT-3.3.4-3]
		// dss: a merged subscription lists the filters without an
		// identifier as 0, which is never sent: only the others cost a
		// slice.
		var ids []int
		for _, id := range sub.Identifiers {
			if id > 0 {
				ids = append(ids, id) // [MQTT-3.3.4-4] ![MQTT-3.3.4-5]
			}
		}
		sort.Ints(ids)
		out.Properties.SubscriptionIdentifier = ids
	}

	if out.FixedHeader.Qos > sub.Qos {
		out.FixedHeader.Qos = sub.Qos
	}

	if out.FixedHeader.Qos > s.Options.Capabilities.MaximumQos {
		out.FixedHeader.Qos = s.Options.Capabilities.MaximumQos // [MQTT-3.2.2-9]
	}

	if cl.Properties.Props.TopicAliasMaximum > 0 {
		var aliasExists bool
		topic := out.TopicName
		out.Properties.TopicAlias, aliasExists = cl.State.TopicAliases.Outbound.Set(topic)
		if out.Properties.TopicAlias > 0 {
			out.Properties.TopicAliasFlag = true
			if aliasExists {
				out.TopicName = ""
			}
		}
	}

	// dss: a message for a session without a connection stays in flight
	// to be sent when the client reconnects: for the first time, not as a
	// redelivery (see ResendInflightMessages).
	offline := cl.Net.Conn == nil || cl.Closed()
	out.Queued = offline && !cl.Net.Inline

	if out.FixedHeader.Qos > 0 {
		held, err := s.holdDelivery(cl, out, &offline)
		if err != nil || held {
			return false, err
		}
	}

	if !offline && out.FixedHeader.Qos == 0 {
		cl.State.handover.RLock()
		offline = cl.State.awaitingConnack // dss: not before the CONNACK
		cl.State.handover.RUnlock()
	}
	if offline {
		return false, packets.CodeDisconnect
	}
	return true, nil
}

// holdDelivery takes out, a QoS 1 or 2 delivery to cl, into cl's
// messages in flight with a packet id of its own. It reports held for a
// message that is not to be written now: parked until cl's receive
// window has room (see backpressure.go), or queued for a session without
// a connection (*offline, which it may set). Held messages are kept
// within the bounds of queued memory (queues.go); err is
// ErrQuotaExceeded for one that cannot be.
//
// dss: a message past the client's receive window waited parked as
// before, but past Capabilities.MaximumInflight messages (sent or not)
// the next ones were dropped, for connected clients as for sessions
// without a connection, although their publishers had their PUBACKs.
// The messages sent and unacknowledged are bounded by the window (at
// most MaximumInflight); the others by memory and packet ids, the oldest
// never sent dropped past them.
func (s *Server) holdDelivery(cl *Client, out *packets.Packet, offline *bool) (held bool, err error) {
	// dss: the session's messages do not move to a new connection
	// while this one is added (see inheritClientSession); nothing of
	// the application runs under the lock.
	cl.State.handover.RLock()
	if cl.State.isTakenOver.Load() {
		cl.State.handover.RUnlock()
		return false, errSessionMoved
	}
	if cl.State.awaitingConnack {
		*offline = true
	}
	out.Queued = *offline && !cl.Net.Inline
	inf := cl.State.Inflight
	var dropped []droppedMessage
	i, err := cl.NextPacketID() // [MQTT-4.3.2-1] [MQTT-4.3.3-1]
	for err != nil {
		// dss: every packet id is held: the oldest message never sent
		// gives its up.
		d, ok := inf.dropOldest(sessionLimit)
		if !ok {
			cl.State.handover.RUnlock()
			s.queuedDropped(cl, dropped)
			return false, s.deliveryDropped(cl, out, err)
		}
		dropped = append(dropped, d)
		i, err = cl.NextPacketID()
	}
	out.PacketID = uint16(i) // [MQTT-2.2.1-4]

	// A message is sent at once while the client's receive window has
	// room and no older message waits for it; otherwise it is parked.
	park := !out.Queued && atomic.LoadInt32(&inf.maximumSendQuota) > 0 &&
		(atomic.LoadInt32(&inf.sendQuota) <= 0 || inf.HasParked())
	added := false
	refused := withinLimits
	if out.Queued || park {
		if park {
			out.Expiry = -1
		}
		var more []droppedMessage
		more, refused = inf.queue(out)
		dropped = append(dropped, more...)
		added = refused == withinLimits
	} else {
		added = inf.Set(out) // [MQTT-4.3.2-3] [MQTT-4.3.3-3]
	}
	cl.State.handover.RUnlock()
	if (out.Queued || park) && !s.queueDelivered(cl, out, dropped, refused) {
		return false, packets.ErrQuotaExceeded
	} else if len(dropped) > 0 && !out.Queued && !park {
		s.queuedDropped(cl, dropped)
	}
	if park && atomic.LoadInt32(&inf.sendQuota) > 0 {
		s.releaseParked(cl) // parked behind older ones, with quota to go
	}
	if added {
		atomic.AddInt64(&s.Info.Inflight, 1)
		if !park {
			cl.State.Inflight.DecreaseSendQuota()
		}
	}
	return park, nil
}

// deliveryDropped counts and logs a QoS delivery dropped because the
// client's inflight store is full, or for want of a packet id (err), and
// returns the error for it.
func (s *Server) deliveryDropped(cl *Client, out *packets.Packet, err error) error {
	atomic.AddInt64(&s.Info.InflightDropped, 1)
	if err != nil {
		s.logDropped(cl, "packet ids exhausted")
	} else {
		s.logDropped(cl, "unacknowledged messages at the maximum")
	}
	return packets.ErrQuotaExceeded
}

// enqueue hands a prepared delivery, and the acknowledgement to write
// before it, if any, to the client's write loop.
func (s *Server) enqueue(cl *Client, out, ack *packets.Packet) error {
	// dss: a QoS 1 or 2 message is queued whatever the queue holds: it
	// is in flight already, within the client's receive window (at most
	// MaximumInflight); dropping it here lost a message whose publisher
	// had its PUBACK.
	if !cl.enqueueBounded(pendingWrite{pk: out, ack: ack}, out.FixedHeader.Qos == 0) {
		atomic.AddInt64(&s.Info.MessagesDropped, 1)
		s.logDropped(cl, "too many pending writes")
		if out.FixedHeader.Qos > 0 {
			cl.State.Inflight.Delete(out.PacketID) // packet was dropped due to irregular circumstances, so rollback inflight.
			cl.State.Inflight.IncreaseSendQuota()
		}
		return packets.ErrPendingClientWritesExceeded
	}
	return nil
}
