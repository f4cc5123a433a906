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
//
// dss: round, if not nil, is the read loop's round that routes it (see
// writeRound): the subscribers' writes wait for its end.
func (s *Server) publishToSubscribers(pk *packets.Packet, round *writeRound) (congested *Client) {
	if pk.Ignore {
		return nil
	}
	s.stampRouted(pk)
	return s.routeLocal(pk, s.remoteRoute(pk), round) // dss: and to the other nodes of a cluster
}

// stampRouted sets when a message routed from here was created and
// expires, if not set yet.
func (s *Server) stampRouted(pk *packets.Packet) {
	var now time.Time // read once, and only when needed
	if pk.Created == 0 || pk.Expires == 0 && pk.Properties.MessageExpiryInterval > 0 {
		now = time.Now()
	}
	if pk.Created == 0 {
		pk.Created = now.Unix()
	}

	if pk.Expiry == 0 {
		if expiry := minimum(s.Options.Capabilities.MaximumMessageExpiryInterval,
			int64(pk.Properties.MessageExpiryInterval)); expiry > 0 {
			pk.Expiry = pk.Created + expiry
		}
	}
	if pk.Expires == 0 {
		s.setExpires(pk, now) // does nothing without an interval
	}
}

// routeLocal delivers pk to the subscribers of this server; r, if not nil,
// decides which shared subscriptions are served here (dss). It returns a
// subscriber that could not take the message yet, as publishToSubscribers
// does.
//
// dss: a topic with only clients' own subscriptions here (the most
// common) is routed by its route in the topic index's cache, without a
// scan of the trie.
func (s *Server) routeLocal(pk *packets.Packet, r Routed, round *writeRound) (congested *Client) {
	if rt := s.Topics.routeIfCacheable(pk.TopicName); rt != nil && !rt.General {
		for i := range rt.Clients {
			congested = s.routeTo(rt.Clients[i].ID, rt.Clients[i].Sub, pk, congested, round)
		}
		return congested
	}
	subscribers := s.Topics.Subscribers(pk.TopicName)
	if len(subscribers.Shared) > 0 {
		keepServed(subscribers, r)
	}
	if len(subscribers.Shared) > 0 {
		subscribers.SelectShared()
		subscribers.MergeSharedSelected()
	}

	for _, inlineSubscription := range subscribers.InlineSubscriptions {
		inlineSubscription.Handler(s.inlineClient, inlineSubscription.Subscription, *pk)
	}

	for id, sub := range subscribers.Subscriptions {
		congested = s.routeTo(id, sub, pk, congested, round)
	}
	return congested
}

// routeTo delivers pk to client id through its subscription sub, and
// returns congested, or the client if it could not take the message yet
// and congested is nil.
func (s *Server) routeTo(id string, sub packets.Subscription, pk *packets.Packet, congested *Client, round *writeRound) *Client {
	cl, ok := s.Clients.Get(id)
	if !ok {
		return congested
	}
	parked, err := s.publishToClient(cl, sub, pk, round)
	for errors.Is(err, errSessionMoved) && cl.State.successor.Load() != nil {
		cl = cl.State.successor.Load() // dss: the session's connection now
		parked, err = s.publishToClient(cl, sub, pk, round)
	}
	if err != nil {
		s.Log.Debug("failed publishing packet", "error", err, "client", cl.ID, "topic", pk.TopicName)
	} else if parked && congested == nil {
		congested = cl
	}
	return congested
}

// publishToClient delivers a copy of pk to cl through its subscription
// sub, for its writer to send (round's, if not nil); parked reports a
// QoS 1 or 2 copy that waits for cl's receive window (see
// backpressure.go).
func (s *Server) publishToClient(cl *Client, sub packets.Subscription, pk *packets.Packet, round *writeRound) (parked bool, err error) {
	out := new(packets.Packet)
	*out = pk.Copy(false)
	send, parked, err := s.prepareDelivery(cl, sub, out, false)
	if !send || err != nil {
		return parked, err
	}
	return false, s.enqueue(cl, out, nil, round)
}

// Delivery says how Deliver sends a message.
type Delivery struct {
	// Ack, if not nil, goes just before the message, in the same write:
	// the PUBACK of the request the message answers.
	Ack *packets.Packet
	// Now has the caller write at once when the client's writer has
	// nothing queued or being written (see Client.WriteNow), waiting for
	// the connection to take every byte with Wait (the caller is the
	// client's own reader). Otherwise the client's writer sends it.
	Now, Wait bool
	// Checked says that CheckACL allowed the client the topic already:
	// Options.Access is not asked again.
	Checked bool
}

// Deliver sends pk to cl as routing does for cl's subscription sub that
// matches pk's topic: the no-local rule, the access check, the retain
// flag, subscription identifiers, the QoS, the topic alias, the packet
// identifier and the message in flight, then the write. A message past
// cl's receive window is parked and sent later; one for a session
// without a connection is kept for its next. It reports whether d.Ack
// was written or queued; when it was not, the caller sees to it.
//
// With d.Now, pk itself is made into the packet for cl (a caller with
// other receivers gives each a copy of its own); otherwise a copy is,
// which shares pk's properties, and pk stays as it was. Neither pk nor
// d.Ack is kept.
//
// dss: the state store answers a request with its PUBACK and response
// from the goroutine that has the result, without waking a write loop,
// and delivers a response to the subscribers of its response topic
// without the topic trie.
func (s *Server) Deliver(cl *Client, sub packets.Subscription, pk *packets.Packet, d Delivery) (bool, error) {
	out := pk
	if !d.Now {
		out = new(packets.Packet)
		*out = *pk
	}
	send, _, err := s.prepareDelivery(cl, sub, out, d.Checked)
	if !send || err != nil {
		return false, err
	}
	if d.Now {
		var written bool
		if d.Ack != nil {
			written, err = cl.WriteNow(d.Wait, d.Ack, out)
		} else {
			written, err = cl.WriteNow(d.Wait, out)
		}
		switch {
		case written:
			return d.Ack != nil, err // an error here is the connection's: nothing to retry
		case err != nil:
			return false, err
		}
		queued := new(packets.Packet)
		*queued = *out
		out = queued
	}
	var ack *packets.Packet
	if d.Ack != nil {
		ack = new(packets.Packet)
		*ack = *d.Ack
	}
	if err := s.enqueue(cl, out, ack, nil); err != nil {
		return false, err
	}
	return ack != nil, nil
}

// CheckACL asks Options.Access whether cl may publish on topic (write) or
// receive it (read).
//
// dss: so that the state store can check the topic of a requester's own
// response route once, when the route is made.
func (s *Server) CheckACL(cl *Client, topic string, write bool) bool {
	return s.Options.allowed(cl, topic, write)
}

// prepareDelivery does for a delivery of out to cl through the
// subscription sub what comes before the write (see Deliver), the access
// check unless checked. It changes out in place into the packet to
// write, and reports whether it is to be written now (not for no-local,
// nor when the message is parked, which parked reports, or kept for a
// session without a connection). Once parked, out is the client's: it
// may be sent, and changed, at any time.
func (s *Server) prepareDelivery(cl *Client, sub packets.Subscription, out *packets.Packet, checked bool) (send, parked bool, err error) {
	if sub.NoLocal && out.Origin == cl.ID {
		return false, false, nil // [MQTT-3.8.3-3]
	}
	if !checked && !s.Options.allowed(cl, out.TopicName, false) {
		return false, false, packets.ErrNotAuthorized
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
		parked, err := s.holdDelivery(cl, out, &offline)
		if err != nil || parked {
			return false, parked, err
		}
	}

	if !offline && out.FixedHeader.Qos == 0 {
		cl.State.handover.RLock()
		offline = cl.State.awaitingConnack // dss: not before the CONNACK
		cl.State.handover.RUnlock()
	}
	if offline {
		return false, false, packets.CodeDisconnect
	}
	return true, false, nil
}

// holdDelivery takes out, a QoS 1 or 2 delivery to cl, into cl's
// messages in flight with a packet id of its own. It reports parked for a
// message that waits for cl's receive window to have room (see
// backpressure.go); one queued for a session without a connection is not
// written either (*offline, which it may set). Both are kept
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
func (s *Server) holdDelivery(cl *Client, out *packets.Packet, offline *bool) (parked bool, err error) {
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
// before it, if any, to the client's writer: round's, if not nil.
func (s *Server) enqueue(cl *Client, out, ack *packets.Packet, round *writeRound) error {
	// dss: a QoS 1 or 2 message is queued whatever the queue holds: it
	// is in flight already, within the client's receive window (at most
	// MaximumInflight); dropping it here lost a message whose publisher
	// had its PUBACK.
	if !cl.enqueueBounded(pendingWrite{pk: out, ack: ack}, out.FixedHeader.Qos == 0, round) {
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
