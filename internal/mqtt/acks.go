// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// sendParked sends the next packet parked for lack of send quota, if any.
func (s *Server) sendParked(cl *Client) {
	if !cl.State.Inflight.HasParked() {
		return
	}
	s.releaseParked(cl)
}

// releaseParked sends cl's parked messages, oldest first, as far as its
// send quota goes. They go through cl's write loop, after what it holds
// (they are newer), and one goroutine at a time releases: a publisher
// whose message was parked behind them may release them too (see
// holdDelivery), and no message may be released twice.
//
// dss: one message was released per packet the client sent, written at
// once past the write loop's queue; a message parked behind others while
// the quota had room then waited for the client's next packet.
func (s *Server) releaseParked(cl *Client) {
	inf := cl.State.Inflight
	for inf.HasParked() && atomic.LoadInt32(&inf.sendQuota) > 0 {
		if !cl.State.flow.releasing.TryLock() {
			return // its holder looks again once it lets go
		}
		for atomic.LoadInt32(&inf.sendQuota) > 0 {
			next, ok := inf.NextImmediate()
			if !ok {
				break
			}
			// dss: the packet was deleted from the inflight map once
			// written, so its PUBACK found nothing and the send quota
			// it took was never given back: after Receive Maximum such
			// releases every later message to the client stayed
			// parked. It now stays inflight, no longer parked, until
			// its PUBACK.
			next.Expiry = 0
			inf.Set(&next)
			inf.DecreaseSendQuota()
			out := new(packets.Packet)
			*out = next
			_ = s.enqueue(cl, out, nil, nil)
		}
		cl.State.flow.releasing.Unlock()
	}
}

// buildAck builds a standardised ack message for Puback, Pubrec, Pubrel, Pubcomp packets.
func (s *Server) buildAck(packetID uint16, pkt, qos byte, properties packets.Properties, reason packets.Code) packets.Packet {
	if s.Options.Capabilities.Compatibilities.NoInheritedPropertiesOnAck {
		properties = packets.Properties{}
	}
	if reason.Code >= packets.ErrUnspecifiedError.Code {
		properties.ReasonString = reason.Reason
	}

	now := time.Now().Unix()
	pk := packets.Packet{
		FixedHeader: packets.FixedHeader{
			Type: pkt,
			Qos:  qos,
		},
		PacketID:   packetID,    // [MQTT-2.2.1-5]
		ReasonCode: reason.Code, // [MQTT-3.4.2-1]
		Properties: properties,
		Created:    now,
		Expiry:     now + s.Options.Capabilities.MaximumMessageExpiryInterval,
	}

	return pk
}

// processPuback processes a Puback packet, denoting completion of a QOS 1 packet sent from the server.
func (s *Server) processPuback(cl *Client, pk *packets.Packet) error {
	// An id not in flight is omitted, but would be
	// packets.ErrPacketIdentifierNotFound. dss: Delete says so; asking
	// Has first took the lock and looked the id up twice.
	if ok := cl.State.Inflight.Delete(pk.PacketID); ok { // [MQTT-4.3.2-5]
		cl.State.Inflight.IncreaseSendQuota()
		cl.State.retained.wake()
		cl.acknowledged()
		atomic.AddInt64(&s.Info.Inflight, -1)
		s.acks.signal()
	}

	return nil
}

// processPubrec processes a Pubrec packet, denoting receipt of a QOS 2 packet sent from the server.
func (s *Server) processPubrec(cl *Client, pk *packets.Packet) error {
	if !cl.State.Inflight.Has(pk.PacketID) { // [MQTT-4.3.3-7] [MQTT-4.3.3-13]
		ack := s.buildAck(pk.PacketID, packets.Pubrel, 1, pk.Properties, packets.ErrPacketIdentifierNotFound)
		return cl.Write(&ack)
	}

	if pk.ReasonCode >= packets.ErrUnspecifiedError.Code || !pk.ReasonCodeValid() { // [MQTT-4.3.3-4]
		if ok := cl.State.Inflight.Delete(pk.PacketID); ok {
			atomic.AddInt64(&s.Info.Inflight, -1)
		}
		return nil // as per MQTT5 Section 4.13.2 paragraph 2
	}

	ack := s.buildAck(pk.PacketID, packets.Pubrel, 1, pk.Properties, packets.CodeSuccess) // [MQTT-4.3.3-4] ![MQTT-4.3.3-6]
	cl.State.Inflight.DecreaseReceiveQuota()                                              // -1 RECV QUOTA
	cl.State.Inflight.Set(&ack)                                                           // [MQTT-4.3.3-5]
	return cl.Write(&ack)
}

// processPubrel processes a Pubrel packet, denoting completion of a QOS 2 packet sent from the client.
func (s *Server) processPubrel(cl *Client, pk *packets.Packet) error {
	if !cl.State.Inflight.HasInbound(pk.PacketID) { // [MQTT-4.3.3-7] [MQTT-4.3.3-13]
		ack := s.buildAck(pk.PacketID, packets.Pubcomp, 0, pk.Properties, packets.ErrPacketIdentifierNotFound)
		return cl.Write(&ack)
	}

	if pk.ReasonCode >= packets.ErrUnspecifiedError.Code || !pk.ReasonCodeValid() { // [MQTT-4.3.3-9]
		if ok := cl.State.Inflight.DeleteInbound(pk.PacketID); ok {
			atomic.AddInt64(&s.Info.Inflight, -1)
		}
		return nil
	}

	ack := s.buildAck(pk.PacketID, packets.Pubcomp, 0, pk.Properties, packets.CodeSuccess) // [MQTT-4.3.3-11]
	cl.State.Inflight.Set(&ack)

	err := cl.Write(&ack)
	if err != nil {
		return err
	}

	cl.State.Inflight.IncreaseReceiveQuota()                    // +1 RECV QUOTA
	cl.State.Inflight.IncreaseSendQuota()                       // +1 SENT QUOTA
	if ok := cl.State.Inflight.DeleteInbound(pk.PacketID); ok { // [MQTT-4.3.3-12]
		atomic.AddInt64(&s.Info.Inflight, -1)
	}

	return nil
}

// processPubcomp processes a Pubcomp packet, denoting completion of a QOS 2 packet sent from the server.
func (s *Server) processPubcomp(cl *Client, pk *packets.Packet) error {
	// regardless of whether the pubcomp is a success or failure, we end the qos flow, delete inflight, and restore the quotas.
	cl.State.Inflight.IncreaseReceiveQuota() // +1 RECV QUOTA
	cl.State.Inflight.IncreaseSendQuota()    // +1 SENT QUOTA
	cl.State.retained.wake()
	if ok := cl.State.Inflight.Delete(pk.PacketID); ok {
		cl.acknowledged()
		atomic.AddInt64(&s.Info.Inflight, -1)
		s.acks.signal()
	}

	return nil
}

// clearExpiredInflights deletes any inflight messages which have expired.
func (s *Server) clearExpiredInflights(now int64) {
	s.sweep(func(client *Client) {
		client.ClearExpiredInflights(now, s.Options.Capabilities.MaximumMessageExpiryInterval)
	})
}
