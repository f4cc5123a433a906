// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"bytes"
	"errors"
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/mqtt/mempool"
	"github.com/dssio/dss/internal/mqtt/packets"
)

// InjectPacket processes pk as if cl had sent it. An inline client
// (Options.InlineClient) publishes to any topic, $SYS included, without
// the access check. Processing changes pk and keeps nothing of it.
func (s *Server) InjectPacket(cl *Client, pk *packets.Packet) error {
	pk.ProtocolVersion = cl.Properties.ProtocolVersion

	err := s.processPacket(cl, pk)
	if err != nil {
		return err
	}

	if pk.FixedHeader.Type == packets.Publish {
		atomic.AddInt64(&cl.ops.info.MessagesReceived, 1)
	}

	return nil
}

// processPublish processes a Publish packet.
//
// dss: every publish, a request to Options.ConsumedTopic as any other, is
// handed by pointer to Options.Consumer, if there is one.
func (s *Server) processPublish(cl *Client, pk *packets.Packet) error {
	if done, err := s.admitPublish(cl, pk); done {
		return err
	}

	var err error
	if c := s.Options.Consumer; c != nil {
		err = c.ConsumePublish(cl, pk)
	}
	return s.publishOutcome(cl, pk, err)
}

// admitPublish makes the checks and changes every publish gets before
// Options.Consumer sees it. It reports done when the publish ends there,
// with the error to return.
func (s *Server) admitPublish(cl *Client, pk *packets.Packet) (bool, error) {
	if !cl.Net.Inline && !IsValidFilter(pk.TopicName, true) {
		// dss: refused as its QoS asks [MQTT-3.3.4-1]; upstream dropped it
		// without the PUBACK or PUBREC a QoS 1 or 2 publisher waits for.
		return true, s.refusePublishWith(cl, pk, packets.ErrTopicNameInvalid)
	}

	if atomic.LoadInt32(&cl.State.Inflight.receiveQuota) == 0 {
		return true, s.DisconnectClient(cl, packets.ErrReceiveMaximum) // ~[MQTT-3.3.4-7] ~[MQTT-3.3.4-8]
	}

	if code := s.beyondCapabilities(cl, pk); code != packets.CodeSuccess {
		return true, code
	}

	// dss: a topic past the bounds of levels or length is refused before
	// anything is done with it (the alias table does not keep it either).
	if !cl.Net.Inline && s.Options.topicBeyondLimits(pk.TopicName) {
		s.Faults.RefusedTopics.Add(1)
		return true, s.refusePublishWith(cl, pk, packets.ErrTopicNameInvalid)
	}

	// dss: the topic an alias stands for is resolved before the ACL
	// check, which judged the empty topic of a publish through an alias
	// (refusing it under a policy, or admitting it to a topic no longer
	// granted when the grants narrowed).
	if pk.Properties.TopicAliasFlag && pk.Properties.TopicAlias > 0 { // [MQTT-3.3.2-12]
		var known bool
		pk.TopicName, known = cl.State.TopicAliases.Inbound.Set(pk.Properties.TopicAlias, pk.TopicName)
		if !known {
			// dss: an alias this connection never set (aliases last one
			// connection [MQTT-3.3.2-7]) with an empty topic is a Protocol
			// Error (3.3.4).
			return true, packets.ErrProtocolViolationUnknownTopicAlias
		}
	}

	if !cl.Net.Inline && !s.Options.allowed(cl, pk.TopicName, true) {
		return true, s.publishDenied(cl, pk)
	}

	pk.Origin = cl.ID
	// dss: when it was created and expires is set once the consumer let
	// it through (publishAccepted): a request to the state store never
	// needs it, and the clock is a noticeable part of a request's cost.

	if !cl.Net.Inline && cl.State.Inflight.HasInbound(pk.PacketID) {
		if done, err := s.publishIDInFlight(cl, pk); done {
			return true, err
		}
	}

	if pk.FixedHeader.Qos > s.Options.Capabilities.MaximumQos {
		pk.FixedHeader.Qos = s.Options.Capabilities.MaximumQos // [MQTT-3.2.2-9] Reduce qos based on server max qos capability
	}
	return false, nil
}

// setExpires sets when pk, published at now, expires, if its publisher
// gave it a Message Expiry Interval (at most the server's maximum).
//
// dss: Expiry, in whole seconds and set for every message (the server's
// maximum applies to all), bounds how long the server keeps a message;
// Expires is the publisher's expiry to the nanosecond, which decides
// whether the message may still be sent and the interval it is sent with
// [MQTT-3.3.2-5] [MQTT-3.3.2-6].
func (s *Server) setExpires(pk *packets.Packet, now time.Time) {
	interval := int64(pk.Properties.MessageExpiryInterval)
	if interval == 0 {
		return
	}
	if limit := s.Options.Capabilities.MaximumMessageExpiryInterval; limit > 0 && interval > limit {
		interval = limit
	}
	pk.Expires = now.Add(time.Duration(interval) * time.Second).UnixNano()
}

// beyondCapabilities returns the reason code that refuses a publish of an
// MQTT 5 client that the server announced it does not take: a QoS above
// Maximum QoS (0x9B), or the RETAIN flag when retained messages are not
// available (0x9A). The connection then ends with DISCONNECT and the code
// (MQTT 5, 3.2.2.3.4 and 3.2.2.3.5). An MQTT 3.1.1 client, told nothing,
// has its QoS lowered and its message not retained.
//
// dss: upstream lowered the QoS and dropped the retained flag silently
// for every client.
func (s *Server) beyondCapabilities(cl *Client, pk *packets.Packet) packets.Code {
	if cl.Net.Inline || cl.Properties.ProtocolVersion < 5 {
		return packets.CodeSuccess
	}
	if pk.FixedHeader.Qos > s.Options.Capabilities.MaximumQos {
		return packets.ErrQosNotSupported
	}
	if pk.FixedHeader.Retain && s.Options.Capabilities.RetainAvailable == 0 {
		return packets.ErrRetainNotSupported
	}
	return packets.CodeSuccess
}

// publishOutcome ends a publish as Options.Consumer decided with err:
// rejected, refused with a reason code, or accepted (and routed, unless
// ignored).
func (s *Server) publishOutcome(cl *Client, pk *packets.Packet, err error) error {
	if err == nil {
		return s.publishAccepted(cl, pk)
	}
	code, ok := consumerCode(err)
	switch {
	case !ok:
	case code == packets.ErrRejectPacket:
		return nil
	case code == packets.CodeSuccessIgnore:
		pk.Ignore = true
	case cl.Properties.ProtocolVersion == 5 && pk.FixedHeader.Qos > 0:
		return s.refusePublish(cl, pk, packets.Puback, code)
	}
	return s.publishAccepted(cl, pk)
}

// consumerCode returns the packets.Code in err, a consumer's answer.
// dss: a code returned as it is (the broker's every request ends with
// one) is compared as a value, without errors.Is's reflection; upstream
// asserted the type of a code errors.As found wrapped, and panicked.
func consumerCode(err error) (packets.Code, bool) {
	if code, ok := err.(packets.Code); ok {
		return code, true
	}
	var code packets.Code
	return code, errors.As(err, &code)
}

// publishDenied answers a publish the ACL denies.
func (s *Server) publishDenied(cl *Client, pk *packets.Packet) error {
	return s.refusePublishWith(cl, pk, packets.ErrNotAuthorized)
}

// refusePublishWith refuses a publish with code: a QoS 0 publish is
// dropped, a QoS 1 or 2 publish of an MQTT 5 client acknowledged with
// code, and an MQTT 3.1.1 client, which acknowledgements cannot tell,
// disconnected.
func (s *Server) refusePublishWith(cl *Client, pk *packets.Packet, code packets.Code) error {
	if pk.FixedHeader.Qos == 0 {
		return nil
	}

	if cl.Properties.ProtocolVersion != 5 {
		return s.DisconnectClient(cl, code)
	}

	ackType := packets.Puback
	if pk.FixedHeader.Qos == 2 {
		ackType = packets.Pubrec
	}
	return s.refusePublish(cl, pk, ackType, code)
}

// refusePublish acknowledges a publish with an acknowledgement of type
// ackType and a failure code.
func (s *Server) refusePublish(cl *Client, pk *packets.Packet, ackType byte, code packets.Code) error {
	ack := s.buildAck(pk.PacketID, ackType, 0, pk.Properties, code)
	return cl.Write(&ack)
}

// publishIDInFlight handles a publish whose packet id the client's
// earlier QoS 2 publish still holds: the same QoS 2 publish sent again
// before its PUBREL is acknowledged again and not delivered again; any
// other publish with that id is refused. Anything else the client's id
// holds is dropped. It reports whether the publish is done with.
//
// dss: only the client's own packet ids count here; the server's
// messages in flight have ids of their own [MQTT-2.2.1]. And a QoS 2
// publish sent again got PUBREC 0x91, which tells the client the message
// was not accepted when it was.
func (s *Server) publishIDInFlight(cl *Client, pk *packets.Packet) (bool, error) {
	pki, ok := cl.State.Inflight.GetInbound(pk.PacketID)
	if !ok {
		return false, nil
	}
	if pki.FixedHeader.Type == packets.Pubrec {
		code := packets.ErrPacketIdentifierInUse
		if pk.FixedHeader.Qos == 2 {
			code = packets.CodeSuccess // [MQTT-4.3.3-10]
		}
		ack := s.buildAck(pk.PacketID, packets.Pubrec, 0, pk.Properties, code)
		return true, cl.Write(&ack)
	}
	if ok := cl.State.Inflight.DeleteInbound(pk.PacketID); ok { // [MQTT-4.3.2-5]
		atomic.AddInt64(&s.Info.Inflight, -1)
	}
	return false, nil
}

// publishAccepted retains, acknowledges and routes a publish the
// consumer let through.
func (s *Server) publishAccepted(cl *Client, pk *packets.Packet) error {
	s.stampRouted(pk)
	if pk.FixedHeader.Retain && !s.retainMessage(cl, pk) { // [MQTT-3.3.1-5] ![MQTT-3.3.1-8]
		// dss: past the bounds of retained messages, the message is
		// refused whole: neither retained nor routed.
		return s.refusePublishWith(cl, pk, packets.ErrQuotaExceeded)
	}

	// If it's inlineClient, it can't handle PUBREC and PUBREL.
	// When it publishes a package with a qos > 0, the server treats
	// the package as qos=0, and the client receives it as qos=1 or 2.
	if pk.FixedHeader.Qos == 0 || cl.Net.Inline {
		s.publishToSubscribers(pk, cl.Net.loop.round)
		return nil
	}

	cl.State.Inflight.DecreaseReceiveQuota()
	ack := s.buildAck(pk.PacketID, packets.Puback, 0, pk.Properties, packets.QosCodes[pk.FixedHeader.Qos]) // [MQTT-4.3.2-4]
	if pk.FixedHeader.Qos == 2 {
		ack = s.buildAck(pk.PacketID, packets.Pubrec, 0, pk.Properties, packets.CodeSuccess) // [MQTT-3.3.4-1] [MQTT-4.3.3-8]
	}

	if ok := cl.State.Inflight.Set(&ack); ok {
		atomic.AddInt64(&s.Info.Inflight, 1)
	}

	// dss: the message is routed before it is acknowledged, so that an
	// acknowledged message is in every session subscribed to it: a
	// subscriber that reconnects to its session once the publisher has
	// the PUBACK gets it. Upstream acknowledged first, and a session
	// resumed meanwhile lost the message, or got it with DUP 1. A
	// subscriber that could not take it yet slows the publisher (see
	// backpressure.go). In a cluster, the acknowledgement may wait for the
	// other nodes to have it too (remote.go).
	if s.publishAwaiting(cl, pk, &ack) {
		return nil
	}
	if round := cl.Net.loop.round; round != nil && pk.FixedHeader.Qos == 1 {
		return s.ackAfterRound(cl, &ack, round)
	}
	return s.finishPublish(cl, pk, &ack)
}

// ackAfterRound acknowledges a QoS 1 publish of cl's that a read loop's
// turn routed: the PUBACK is queued for cl behind the round's deliveries,
// which the round writes when it ends (writeRound), so that the
// subscribers get the message before the publisher learns it went out.
// Written at once, the PUBACK cost the subscribers a write and the
// publisher's wake-up before theirs: 10 to 40 % of one publisher's round
// trip to one subscriber. A publisher's acknowledgements keep their order
// [MQTT-4.6.0-2]: its later ones queue behind (Client.Write).
func (s *Server) ackAfterRound(cl *Client, ack *packets.Packet, round *writeRound) error {
	buf := mempool.GetBuffer()
	err := cl.encodePacket(ack, buf)
	raw := bytes.Clone(buf.Bytes())
	mempool.PutBuffer(buf)
	if err != nil {
		return err
	}
	cl.enqueueBounded(pendingWrite{raw: raw}, false, round)
	cl.Net.loop.ownAcks++
	if ok := cl.State.Inflight.DeleteInbound(ack.PacketID); ok {
		atomic.AddInt64(&s.Info.Inflight, -1)
	}
	cl.State.Inflight.IncreaseReceiveQuota()
	return nil
}

// finishPublish acknowledges pk, a QoS 1 or 2 publish of cl that was
// routed, with ack.
func (s *Server) finishPublish(cl *Client, pk *packets.Packet, ack *packets.Packet) error {
	err := cl.Write(ack)
	if err != nil {
		return err
	}

	if pk.FixedHeader.Qos == 1 {
		if ok := cl.State.Inflight.DeleteInbound(ack.PacketID); ok {
			atomic.AddInt64(&s.Info.Inflight, -1)
		}
		cl.State.Inflight.IncreaseReceiveQuota()
	}

	return nil
}

// retainMessage adds a message to a topic, and if a persistent store is provided,
// adds the message to the store to be reloaded if necessary.
//
// dss: it reports false for a client's message that the bounds of
// retained messages refuse (see retained.go), which it counts and logs.
func (s *Server) retainMessage(cl *Client, pk *packets.Packet) bool {
	if s.Options.Capabilities.RetainAvailable == 0 || pk.Ignore {
		return true
	}

	out := pk.Copy(false)
	maxCount, maxBytes := s.Options.MaxRetained, s.Options.MaxRetainedBytes
	if cl.Net.Inline {
		maxCount, maxBytes = 0, 0
	}
	if _, ok := s.Topics.retainWithin(&out, maxCount, maxBytes); !ok {
		s.retainedRefused(cl, pk)
		return false
	}
	if ev := s.Options.Retained; ev != nil {
		ev.Retained(cl, pk)
	}
	return true
}

// retainedRefused counts and logs a retained message the bounds refused.
func (s *Server) retainedRefused(cl *Client, pk *packets.Packet) {
	s.Faults.RefusedRetained.Add(1)
	if s.faultLog.Allow() {
		s.Log.Warn("retained message refused: the retained messages are at their bound", "client", cl.ID,
			"remote", cl.Net.Remote, "retained", s.Topics.Retained.Len(), "retained_bytes", s.Topics.RetainedBytes(),
			"max", s.Options.MaxRetained, "max_bytes", s.Options.MaxRetainedBytes, "payload_bytes", len(pk.Payload))
	}
}
