// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"strings"
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// Subscribe adds an inline subscription for the specified topic filter and subscription identifier
// with the provided handler function.
func (s *Server) Subscribe(filter string, subscriptionId int, handler InlineSubFn) error {
	if !s.Options.InlineClient {
		return ErrInlineClientNotEnabled
	}

	if handler == nil {
		return packets.ErrInlineSubscriptionHandlerInvalid
	}

	if !IsValidFilter(filter, false) {
		return packets.ErrTopicFilterInvalid
	}

	subscription := packets.Subscription{
		Identifier: subscriptionId,
		Filter:     filter,
	}

	pk := packets.Packet{ // subscribe like a normal client.
		Origin:      s.inlineClient.ID,
		FixedHeader: packets.FixedHeader{Type: packets.Subscribe},
		Filters:     packets.Subscriptions{subscription},
	}

	inlineSubscription := InlineSubscription{
		Subscription: subscription,
		Handler:      handler,
	}

	s.Topics.InlineSubscribe(inlineSubscription)
	if ev := s.Options.Subscriptions; ev != nil {
		ev.Subscribed(s.inlineClient, &pk, []byte{packets.CodeSuccess.Code})
	}

	// Handling retained messages.
	for _, pkv := range s.Topics.Messages(filter) { // [MQTT-3.8.4-4]
		handler(s.inlineClient, inlineSubscription.Subscription, pkv)
	}
	return nil
}

// Unsubscribe removes an inline subscription for the specified subscription and topic filter.
// It allows you to unsubscribe a specific subscription from the internal subscription
// associated with the given topic filter.
func (s *Server) Unsubscribe(filter string, subscriptionId int) error {
	if !s.Options.InlineClient {
		return ErrInlineClientNotEnabled
	}

	if !IsValidFilter(filter, false) {
		return packets.ErrTopicFilterInvalid
	}

	pk := packets.Packet{
		Origin:      s.inlineClient.ID,
		FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe},
		Filters: packets.Subscriptions{
			{
				Identifier: subscriptionId,
				Filter:     filter,
			},
		},
	}

	s.Topics.InlineUnsubscribe(subscriptionId, filter)
	if ev := s.Options.Subscriptions; ev != nil {
		ev.Unsubscribed(s.inlineClient, &pk)
	}
	return nil
}

// processSubscribe processes a Subscribe packet.
func (s *Server) processSubscribe(cl *Client, pk *packets.Packet) error {
	// dss: the packet id is not checked against the server's messages in
	// flight: the client's packet ids and the server's are independent
	// [MQTT-2.2.1], and SUBACK 0x91 refused a resubscription whose id the
	// server happened to use for a queued message (0x91 is not even a
	// SUBACK code of MQTT 3.1.1 [MQTT-3.9.3-2]).
	if pk.Properties.SubscriptionIdentifier != nil && s.Options.Capabilities.SubIDAvailable == 0 {
		return packets.ErrSubscriptionIdentifiersNotSupported // DISCONNECT 0xA1 (3.2.2.3.12)
	}
	for _, sub := range pk.Filters {
		if sub.NoLocal && IsSharedFilter(sub.Filter) && cl.Properties.ProtocolVersion == 5 {
			// dss: a protocol error, which ends the connection with
			// DISCONNECT 0x82; it was a SUBACK reason code 0x82, which
			// SUBACK does not have [MQTT-3.8.3-4].
			return packets.ErrProtocolViolationInvalidSharedNoLocal
		}
	}

	filterExisted := make([]bool, len(pk.Filters))
	reasonCodes := make([]byte, len(pk.Filters))
	for i, sub := range pk.Filters {
		if !IsValidFilter(sub.Filter, false) {
			reasonCodes[i] = packets.ErrTopicFilterInvalid.Code
		} else if !cl.Net.Inline && s.Options.topicBeyondLimits(sub.Filter) {
			s.Faults.RefusedTopics.Add(1)
			reasonCodes[i] = packets.ErrTopicFilterInvalid.Code // dss: before the index's lock
		} else if code, ok := s.unavailableSubscription(sub.Filter); !ok {
			reasonCodes[i] = code.Code // dss
		} else if sub.NoLocal && IsSharedFilter(sub.Filter) {
			reasonCodes[i] = packets.ErrProtocolViolationInvalidSharedNoLocal.Code // [MQTT-3.8.3-4]
		} else if !s.Options.allowed(cl, sub.Filter, false) {
			reasonCodes[i] = packets.ErrNotAuthorized.Code
			if s.Options.Capabilities.Compatibilities.ObscureNotAuthorized {
				reasonCodes[i] = packets.ErrUnspecifiedError.Code
			}
		} else if s.subscriptionsFull(cl, sub.Filter) {
			reasonCodes[i] = packets.ErrQuotaExceeded.Code // dss
		} else {
			if sub.Qos > s.Options.Capabilities.MaximumQos {
				sub.Qos = s.Options.Capabilities.MaximumQos // [MQTT-3.2.2-9]
			}

			isNew := s.Topics.Subscribe(cl.ID, sub) // [MQTT-3.8.4-3]
			if isNew {
				atomic.AddInt64(&s.Info.Subscriptions, 1)
			}
			cl.State.Subscriptions.Add(sub.Filter, sub) // [MQTT-3.2.2-10]

			filterExisted[i] = !isNew
			reasonCodes[i] = sub.Qos // [MQTT-3.9.3-1] [MQTT-3.8.4-7]
		}

		if reasonCodes[i] > packets.CodeGrantedQos2.Code && cl.Properties.ProtocolVersion < 5 { // MQTT3
			reasonCodes[i] = packets.ErrUnspecifiedError.Code
		}
	}

	ack := packets.Packet{ // [MQTT-3.8.4-1] [MQTT-3.8.4-5]
		FixedHeader: packets.FixedHeader{
			Type: packets.Suback,
		},
		PacketID:    pk.PacketID, // [MQTT-2.2.1-6] [MQTT-3.8.4-2]
		ReasonCodes: reasonCodes, // [MQTT-3.8.4-6]
		Properties: packets.Properties{
			User: pk.Properties.User,
		},
	}

	// dss: the retained messages the subscriptions are sent are those
	// retained by now; one retained after the SUBACK reaches them as it is
	// published, and was sent twice when the retained messages were read
	// later (FORK.md 67).
	mark := s.Topics.retainedMark()
	if ev := s.Options.Subscriptions; ev != nil {
		ev.Subscribed(cl, pk, reasonCodes)
	}
	err := cl.Write(&ack)
	if err != nil {
		return err
	}

	for i, sub := range pk.Filters { // [MQTT-3.3.1-9]
		if reasonCodes[i] >= packets.ErrUnspecifiedError.Code {
			continue
		}

		s.publishRetainedToClient(cl, sub, filterExisted[i], mark)
	}

	return nil
}

// subscriptionsFull reports whether filter would be a subscription of cl
// past Options.MaxSubscriptionsPerClient: a new one when cl holds that
// many already. A filter cl holds may always be subscribed again.
func (s *Server) subscriptionsFull(cl *Client, filter string) bool {
	limit := s.Options.MaxSubscriptionsPerClient
	if limit <= 0 || cl.Net.Inline || cl.State.Subscriptions.Len() < limit {
		return false
	}
	_, held := cl.State.Subscriptions.Get(filter)
	return !held
}

// unavailableSubscription reports the reason code refusing a subscription
// to filter that the server's capabilities rule out: a shared
// subscription when SharedSubAvailable is 0 (0x9E), a filter with a
// wildcard when WildcardSubAvailable is 0 (0xA2). ok is true when the
// filter is served.
//
// dss: the capabilities were announced in CONNACK but not enforced.
func (s *Server) unavailableSubscription(filter string) (code packets.Code, ok bool) {
	caps := s.Options.Capabilities
	if IsSharedFilter(filter) && caps.SharedSubAvailable == 0 {
		return packets.ErrSharedSubscriptionsNotSupported, false
	}
	if caps.WildcardSubAvailable == 0 && strings.ContainsAny(filter, "+#") {
		return packets.ErrWildcardSubscriptionsNotSupported, false
	}
	return packets.CodeSuccess, true
}

// processUnsubscribe processes an unsubscribe packet.
func (s *Server) processUnsubscribe(cl *Client, pk *packets.Packet) error {
	// dss: nor is the packet id of an UNSUBSCRIBE checked against the
	// server's messages in flight [MQTT-2.2.1] (see processSubscribe).
	reasonCodes := make([]byte, len(pk.Filters))
	for i, sub := range pk.Filters { // [MQTT-3.10.4-6] [MQTT-3.11.3-1]
		if !cl.Net.Inline && s.Options.topicBeyondLimits(sub.Filter) {
			// dss: nothing to look for (it could not be subscribed), and
			// the index's lock is not taken for it.
			s.Faults.RefusedTopics.Add(1)
			reasonCodes[i] = packets.ErrTopicFilterInvalid.Code
			continue
		}
		if q := s.Topics.Unsubscribe(sub.Filter, cl.ID); q {
			atomic.AddInt64(&s.Info.Subscriptions, -1)
			reasonCodes[i] = packets.CodeSuccess.Code
		} else {
			reasonCodes[i] = packets.CodeNoSubscriptionExisted.Code
		}

		cl.State.Subscriptions.Delete(sub.Filter) // [MQTT-3.10.4-2] [MQTT-3.10.4-2] ~[MQTT-3.10.4-3]
	}

	ack := packets.Packet{ // [MQTT-3.10.4-4]
		FixedHeader: packets.FixedHeader{
			Type: packets.Unsuback,
		},
		PacketID:    pk.PacketID, // [MQTT-2.2.1-6]  [MQTT-3.10.4-5]
		ReasonCodes: reasonCodes, // [MQTT-3.11.3-2]
		Properties: packets.Properties{
			User: pk.Properties.User,
		},
	}

	if ev := s.Options.Subscriptions; ev != nil {
		ev.Unsubscribed(cl, pk)
	}
	return cl.Write(&ack)
}
