// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"fmt"
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// receivePacket processes an incoming packet for a client, and issues a disconnect to the client
// if an error has occurred (if mqtt v5). Every packet a connection reads
// after its CONNECT comes here, from its reader goroutine or its read
// loop's turn (see Client.readPacket); pk is valid until it returns.
func (s *Server) receivePacket(cl *Client, pk *packets.Packet) error {
	err := s.processPacket(cl, pk)
	if err != nil {
		return s.packetFailed(cl, pk, err)
	}

	return nil
}

// packetFailed ends the processing of a packet that failed with err: a
// failure code is sent to an MQTT 5 client as a DISCONNECT. It returns
// err.
func (s *Server) packetFailed(cl *Client, pk *packets.Packet, err error) error {
	if code, ok := err.(packets.Code); ok &&
		cl.Properties.ProtocolVersion == 5 &&
		code.Code >= packets.ErrUnspecifiedError.Code {
		_ = s.DisconnectClient(cl, code)
	}
	if code, ok := err.(packets.Code); ok && (code.Code == packets.ErrMalformedPacket.Code || code.Code == packets.ErrProtocolViolation.Code) {
		s.Faults.RefusedPackets.Add(1)
	}

	s.logPacketError(cl, pk, err)

	return err
}

// logPacketError logs a packet that could not be processed.
func (s *Server) logPacketError(cl *Client, pk *packets.Packet, err error) {
	// dss: the packet was logged whole (its payload, a CONNECT's
	// password); now one line with its type and sizes, rate limited.
	if s.faultLog.Allow() {
		s.Log.Warn("error processing packet", "error", err, "client", cl.ID, "remote", cl.Net.Remote,
			"listener", cl.Net.Listener, "type", packetName(pk.FixedHeader.Type), "bytes", pk.FixedHeader.Remaining)
	}
}

// processPacket processes an inbound packet for a client. Since the method is
// typically called as a goroutine, errors are primarily for test checking purposes.
func (s *Server) processPacket(cl *Client, pk *packets.Packet) error {
	var err error

	switch pk.FixedHeader.Type {
	case packets.Connect:
		err = s.processConnect(cl, pk)
	case packets.Disconnect:
		err = s.processDisconnect(cl, pk)
	case packets.Pingreq:
		err = s.processPingreq(cl, pk)
	case packets.Publish:
		code := pk.PublishValidate(s.Options.Capabilities.TopicAliasMaximum)
		if code != packets.CodeSuccess {
			return code
		}
		err = s.processPublish(cl, pk)
	case packets.Puback:
		err = s.processPuback(cl, pk)
	case packets.Pubrec:
		err = s.processPubrec(cl, pk)
	case packets.Pubrel:
		err = s.processPubrel(cl, pk)
	case packets.Pubcomp:
		err = s.processPubcomp(cl, pk)
	case packets.Subscribe:
		code := pk.SubscribeValidate()
		if code != packets.CodeSuccess {
			return code
		}
		err = s.processSubscribe(cl, pk)
	case packets.Unsubscribe:
		code := pk.UnsubscribeValidate()
		if code != packets.CodeSuccess {
			return code
		}
		err = s.processUnsubscribe(cl, pk)
	case packets.Auth:
		code := pk.AuthValidate()
		if code != packets.CodeSuccess {
			return code
		}
		err = s.processAuth(cl, pk)
	default:
		return fmt.Errorf("no valid packet available; %v", pk.FixedHeader.Type)
	}

	if err != nil {
		return err
	}

	if atomic.LoadInt32(&cl.State.Inflight.sendQuota) > 0 {
		s.sendParked(cl)
	}

	return nil
}

// processPingreq processes a Pingreq packet.
//
// dss: not inlined into processPacket: the PINGRESP it writes (800
// bytes) would be in the frame of every packet processed.
//
//go:noinline
func (s *Server) processPingreq(cl *Client, _ *packets.Packet) error {
	resp := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pingresp}} // [MQTT-3.12.4-1]
	return cl.Write(&resp)
}

// processAuth processes an Auth packet.
func (s *Server) processAuth(cl *Client, pk *packets.Packet) error {
	// dss: an AUTH from a client that named no Authentication Method in
	// its CONNECT is a Protocol Error [MQTT-4.12.0-7]; upstream answered
	// nothing. A CONNECT that names one is refused (validateConnect), so
	// no client of this core may send AUTH.
	if cl.Properties.Props.AuthenticationMethod == "" {
		return packets.ErrProtocolViolationUnexpectedAuth
	}
	return nil
}
