// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// EstablishConnection establishes a new client when a listener accepts a new connection.
func (s *Server) EstablishConnection(listener string, c net.Conn) error {
	cl := s.NewClient(c, listener, "", false)
	return s.attachClient(cl, listener)
}

// attachClient validates an incoming client connection and if viable, attaches the client
// to the server, performs session housekeeping, and reads incoming packets.
//
// dss: an established connection's reading and end are serveClient's,
// which may go on on another goroutine (see Client.park): attachClient
// may return while the connection goes on.
func (s *Server) attachClient(cl *Client, listener string) error {
	// dss: Add raced with Close's Wait for a connection accepted as the
	// server closed; after Close began, a connection is refused.
	s.attachMu.Lock()
	if s.closing {
		s.attachMu.Unlock()
		cl.Stop(ErrServerClosing)
		return ErrServerClosing
	}
	s.Listeners.ClientsWg.Add(1)
	s.connecting[cl] = struct{}{}
	s.attachMu.Unlock()
	served := false // once set, endClient ends the connection
	defer func() {
		if !served {
			cl.Stop(nil)
			s.Listeners.ClientsWg.Done()
		}
	}()

	cl.startWriting()

	// dss: a connection has ConnectTimeout to send its whole CONNECT
	// (also one byte at a time); upstream waited for ever.
	if d := s.Options.ConnectTimeout; d > 0 && cl.Net.Conn != nil {
		cl.Net.deadlineAt, cl.Net.deadlineSet = time.Now().Add(d), true
		_ = cl.Net.Conn.SetDeadline(cl.Net.deadlineAt)
	}
	var pk packets.Packet
	err := s.readConnectionPacket(cl, &pk)
	s.attachMu.Lock()
	delete(s.connecting, cl)
	s.attachMu.Unlock()
	if err != nil {
		s.connectFailed(cl, pk.ProtocolVersion, err)
		return fmt.Errorf("read connection: %w", err)
	}

	cl.ParseConnect(listener, &pk)
	if atomic.LoadInt64(&s.Info.ClientsConnected) >= s.Options.Capabilities.MaximumClients {
		if cl.Properties.ProtocolVersion < 5 {
			s.SendConnack(cl, packets.ErrServerUnavailable, false, nil)
		} else {
			s.SendConnack(cl, packets.ErrServerBusy, false, nil)
		}

		return packets.ErrServerBusy
	}

	code := s.validateConnect(cl, &pk) // [MQTT-3.1.4-1] [MQTT-3.1.4-2]
	if code != packets.CodeSuccess {
		if err := s.SendConnack(cl, code, false, nil); err != nil {
			return fmt.Errorf("invalid connection send ack: %w", err)
		}
		return code // [MQTT-3.2.2-7] [MQTT-3.1.4-6]
	}

	if s.Options.Access == nil { // [MQTT-3.1.4-2]
		err = packets.ErrBadUsernameOrPassword
	} else {
		err = s.Options.Access.Connect(cl, &pk)
	}
	if err != nil {
		// dss: an Access that refuses with a reason code has it sent in the
		// CONNACK; the client learns why (bad credentials, not
		// authorized) instead of seeing the connection drop.
		if code, ok := err.(packets.Code); ok && code.Code >= packets.ErrUnspecifiedError.Code {
			if err := s.SendConnack(cl, code, false, nil); err != nil {
				return fmt.Errorf("refused connection send ack: %w", err)
			}
		}
		return err
	}

	cl.Net.deadlineSet = false // the keepalive's deadline replaces the CONNECT's
	cl.Net.src.packetTimeout, cl.Net.src.packetDeadline = 0, false
	cl.refreshDeadline(cl.State.Keepalive)
	if cl.Net.Conn != nil {
		// dss: from here on, a deadline past while the client's bytes
		// wait in the socket is the server's lateness, not the client's
		// (the CONNECT's deadline bounds the whole CONNECT).
		cl.Net.src.stillSending = cl.stillSending
	}

	// dss: a Will is a publish like any other, checked like one before
	// the connection is accepted (and again when it is sent); upstream
	// never checked it, so a client could publish through its Will where
	// it may not publish. A Will cannot be a publish the application
	// consumes (see willConsumed).
	if atomic.LoadUint32(&cl.Properties.Will.Flag) == 1 && (s.willConsumed(cl.Properties.Will.TopicName) ||
		!s.Options.allowed(cl, cl.Properties.Will.TopicName, true)) {
		if err := s.SendConnack(cl, packets.ErrNotAuthorized, false, nil); err != nil {
			return fmt.Errorf("refused will send ack: %w", err)
		}
		return packets.ErrNotAuthorized
	}

	atomic.AddInt64(&s.Info.ClientsConnected, 1)
	defer func() {
		if !served {
			atomic.AddInt64(&s.Info.ClientsConnected, -1)
		}
	}()

	if ev := s.Options.Sessions; ev != nil {
		ev.SessionEstablishing(cl, &pk)
	}

	// dss: the takeover of an earlier connection with the same client id
	// and that connection's own cleanup (below) are serialized, so that
	// the cleanup cannot remove the new connection's subscriptions or its
	// entry in the client list. The old connection is told to go only
	// after the new one is registered.
	s.sessionMu.Lock()
	if existing, ok := s.Clients.Get(cl.ID); ok && s.Options.MayTakeOver != nil && !s.Options.MayTakeOver(existing, cl) {
		s.sessionMu.Unlock()
		s.Log.Warn("session takeover refused", "client", cl.ID, "remote", cl.Net.Remote, "listener", cl.Net.Listener)
		if err := s.SendConnack(cl, packets.ErrClientIdentifierNotValid, false, nil); err != nil {
			return fmt.Errorf("refused takeover send ack: %w", err)
		}
		return packets.ErrClientIdentifierNotValid
	}
	// dss: a connection that registers once Close began is not among the
	// clients Close disconnects, and Close would wait for it as long as
	// the client stays: it is refused. The check and the registration
	// are one step for Close (attachMu), which sets closing before it
	// lists the clients.
	s.attachMu.Lock()
	if s.closing {
		s.attachMu.Unlock()
		s.sessionMu.Unlock()
		_ = s.SendConnack(cl, packets.ErrServerUnavailable, false, nil)
		return ErrServerClosing
	}
	cl.State.awaitingConnack = true // not yet reachable by a delivery
	sessionPresent, takenOver := s.inheritClientSession(&pk, cl)
	s.Clients.Add(cl) // [MQTT-4.1.0-1]
	s.attachMu.Unlock()
	s.sessionMu.Unlock()
	if takenOver != nil {
		_ = s.DisconnectClient(takenOver, packets.ErrSessionTakenOver) // [MQTT-3.1.4-3]
	}

	// dss: a message routed to the connection before its CONNACK is
	// queued, and sent after it with the session's messages; upstream
	// could write it before the CONNACK.
	//
	// The CONNACK is written under the handover lock: a QoS 0 delivery,
	// which is dropped while the CONNACK is awaited, waits for it instead
	// of falling between its write and the end of the wait (a message
	// published after the client had its CONNACK was now and then lost).
	cl.State.handover.Lock()
	err = s.SendConnack(cl, code, sessionPresent, nil) // [MQTT-3.1.4-5] [MQTT-3.2.0-1] [MQTT-3.2.0-2] &[MQTT-3.14.0-1]
	cl.State.awaitingConnack = false
	cl.State.handover.Unlock()
	if err != nil {
		return fmt.Errorf("ack connection packet: %w", err)
	}

	s.loop.willDelayed.Delete(cl.ID) // [MQTT-3.1.3-9]

	if sessionPresent || cl.State.Inflight.Len() > 0 {
		err = cl.ResendInflightMessages(true)
		if err != nil {
			return fmt.Errorf("resend inflight: %w", err)
		}
	}

	if ev := s.Options.Sessions; ev != nil {
		ev.SessionEstablished(cl)
	}

	served = true
	return s.serveClient(cl)
}

// serveClient reads the established connection's packets until it ends,
// and ends it; or until the connection parks in a read loop, which
// continues it (resumeClient) on another goroutine, and returns nil.
func (s *Server) serveClient(cl *Client) error {
	err := s.readClient(cl)
	if err == errParked {
		return nil
	}
	return s.endClient(cl, err)
}

// resumeClient continues a connection taken back from its read loop,
// on the caller's goroutine: err is what ended it while it was parked,
// if anything did.
func (s *Server) resumeClient(cl *Client, err error) {
	if err == nil {
		_ = s.serveClient(cl)
		return
	}
	_ = s.endClient(cl, err)
}

// endClient ends the established connection, whose packets could not be
// read any further because of err (nil: it ended as it should), and
// returns the error it ended with.
func (s *Server) endClient(cl *Client, err error) error {
	defer s.Listeners.ClientsWg.Done()
	defer cl.Stop(nil)
	defer atomic.AddInt64(&s.Info.ClientsConnected, -1)

	if code, ok := cl.StopCause().(packets.Code); err == nil && ok && code.Code >= packets.ErrUnspecifiedError.Code {
		// dss: the server ended the connection with a DISCONNECT; the
		// reader may have seen that before its read failed. The will is
		// sent either way [MQTT-3.1.2-8].
		err = code
	}
	if err != nil {
		s.readFailed(cl, err)
		s.sendLWT(cl)
		cl.Stop(err)
	} else {
		cl.Properties.Will = Will{} // [MQTT-3.14.4-3] [MQTT-3.1.2-10]
	}
	s.Log.Debug("client disconnected", "error", err, "client", cl.ID, "remote", cl.Net.Remote, "listener", cl.Net.Listener)

	expire := (cl.Properties.ProtocolVersion == 5 && cl.Properties.Props.SessionExpiryInterval == 0) || (cl.Properties.ProtocolVersion < 5 && cl.Properties.Clean)
	if ev := s.Options.Sessions; ev != nil {
		ev.Disconnected(cl, err, expire)
	}
	s.acks.signal() // dss: nothing of this connection is awaited any more

	s.sessionMu.Lock()
	var dropped []droppedMessage
	if expire && !cl.IsTakenOver() {
		cl.ClearInflights()
		s.UnsubscribeClient(cl)
		s.Clients.Delete(cl.ID) // [MQTT-4.1.0-2] ![MQTT-3.1.2-23]
	} else if !cl.IsTakenOver() {
		dropped = cl.State.Inflight.goOffline() // dss: its messages are queued now
	}
	s.sessionMu.Unlock()
	s.queuedDropped(cl, dropped)

	cl.closeLingering() // dss: after a DISCONNECT from the server
	cl.State.retained.wait()

	return err
}

// readConnectionPacket reads the first incoming header for a connection, and if
// acceptable, returns the valid connection packet.
func (s *Server) readConnectionPacket(cl *Client, pk *packets.Packet) error {
	var fh packets.FixedHeader
	if err := cl.ReadFixedHeader(&fh); err != nil {
		return err
	}

	if fh.Type != packets.Connect {
		return packets.ErrProtocolViolationRequireFirstConnect // [MQTT-3.1.0-1]
	}

	return cl.ReadPacket(&fh, pk)
}

// validateConnect validates that a connect packet is compliant.
func (s *Server) validateConnect(cl *Client, pk *packets.Packet) packets.Code {
	code := pk.ConnectValidate() // [MQTT-3.1.4-1] [MQTT-3.1.4-2]
	if code != packets.CodeSuccess {
		return code
	}

	if cl.Properties.ProtocolVersion < 5 && !pk.Connect.Clean && pk.Connect.ClientIdentifier == "" {
		return packets.ErrUnspecifiedError
	}

	if s.Options.MaxClientIDSize > 0 && len(pk.Connect.ClientIdentifier) > s.Options.MaxClientIDSize {
		return packets.ErrClientIdentifierNotValid // dss
	}

	// dss: enhanced authentication (AUTH) is not supported, so a CONNECT
	// that names an Authentication Method is refused and its connection
	// closed [MQTT-4.12.0-1]; upstream went on as if it named none.
	if cl.Properties.ProtocolVersion == 5 && pk.Properties.AuthenticationMethod != "" {
		return packets.ErrBadAuthenticationMethod
	}

	if pk.Connect.WillFlag && s.Options.topicBeyondLimits(pk.Connect.WillTopic) {
		s.Faults.RefusedTopics.Add(1)
		return packets.ErrTopicNameInvalid // dss: a Will is a publish
	}

	if cl.Properties.ProtocolVersion < s.Options.Capabilities.MinimumProtocolVersion {
		return packets.ErrUnsupportedProtocolVersion // [MQTT-3.1.2-2]
	} else if cl.Properties.Will.Qos > s.Options.Capabilities.MaximumQos {
		return packets.ErrQosNotSupported // [MQTT-3.2.2-12]
	} else if cl.Properties.Will.Retain && s.Options.Capabilities.RetainAvailable == 0x00 {
		return packets.ErrRetainNotSupported // [MQTT-3.2.2-13]
	}

	return code
}

// inheritClientSession inherits the state of an existing client sharing the same
// connection ID. If clean is true, the state of any previously existing client
// session is abandoned.
//
// dss: it is called with sessionMu held and returns the connection taken
// over, for the caller to disconnect once the new one is registered.
func (s *Server) inheritClientSession(pk *packets.Packet, cl *Client) (bool, *Client) {
	if existing, ok := s.Clients.Get(cl.ID); ok {
		if pk.Connect.Clean || (existing.Properties.Clean && existing.Properties.ProtocolVersion < 5) { // [MQTT-3.1.2-4] [MQTT-3.1.4-4]
			s.UnsubscribeClient(existing)
			existing.ClearInflights()
			existing.State.Inflight.detach()
			existing.State.isTakenOver.Store(true) // only set isTakenOver after unsubscribe has occurred
			return false, existing                 // [MQTT-3.2.2-3]
		}

		// dss: no delivery adds to the old connection's messages once
		// they are cloned: one that comes later goes to the new
		// connection (see errSessionMoved). Upstream's could land in the
		// old connection's messages after the clone, and was lost.
		existing.State.handover.Lock()
		existing.State.isTakenOver.Store(true)
		if existing.State.Inflight.Len() > 0 {
			cl.State.Inflight = existing.State.Inflight.Clone() // [MQTT-3.1.2-5]
			if cl.State.Inflight.maximumReceiveQuota == 0 && cl.ops.options.Capabilities.ReceiveMaximum != 0 {
				cl.State.Inflight.ResetReceiveQuota(int32(cl.ops.options.Capabilities.ReceiveMaximum)) // server receive max per client
				cl.State.Inflight.ResetSendQuota(cl.sendWindow())                                      // client receive max
			}
		}
		existing.State.successor.Store(cl)
		existing.State.handover.Unlock()

		for _, sub := range existing.State.Subscriptions.GetAll() {
			// dss: an inherited subscription is checked as a new one
			// would be: the new connection may not be allowed what the
			// old one was.
			if !s.Options.allowed(cl, sub.Filter, false) {
				s.Log.Debug("inherited subscription not authorized", "client", cl.ID, "filter", sub.Filter)
				continue
			}
			existed := !s.Topics.Subscribe(cl.ID, sub) // [MQTT-3.8.4-3]
			if !existed {
				atomic.AddInt64(&s.Info.Subscriptions, 1)
			}
			cl.State.Subscriptions.Add(sub.Filter, sub)
		}

		// Clean the state of the existing client to prevent sequential take-overs
		// from increasing memory usage by inflights + subs * client-id.
		s.UnsubscribeClient(existing)
		existing.ClearInflights()
		existing.State.Inflight.detach() // dss: what reaches it still no longer counts

		s.Log.Debug("session taken over", "client", cl.ID, "old_remote", existing.Net.Remote, "new_remote", cl.Net.Remote)

		return true, existing // [MQTT-3.2.2-3]
	}

	return false, nil // [MQTT-3.2.2-2]
}

// SendConnack returns a Connack packet to a client.
func (s *Server) SendConnack(cl *Client, reason packets.Code, present bool, properties *packets.Properties) error {
	if properties == nil {
		properties = &packets.Properties{
			ReceiveMaximum: s.Options.Capabilities.ReceiveMaximum,
		}
	}

	properties.ReceiveMaximum = s.Options.Capabilities.ReceiveMaximum // 3.2.2.3.3 Receive Maximum
	if cl.State.ServerKeepalive {                                     // Access.Connect may set it.
		properties.ServerKeepAlive = cl.State.Keepalive // [MQTT-3.1.2-21]
		properties.ServerKeepAliveFlag = true
	}

	if reason.Code >= packets.ErrUnspecifiedError.Code {
		if cl.Properties.ProtocolVersion < 5 {
			if v3reason, ok := packets.V5CodesToV3[reason]; ok { // NB v3 3.2.2.3 Connack return codes
				reason = v3reason
			}
		}

		properties.ReasonString = reason.Reason
		ack := packets.Packet{
			FixedHeader: packets.FixedHeader{
				Type: packets.Connack,
			},
			SessionPresent: false,       // [MQTT-3.2.2-6]
			ReasonCode:     reason.Code, // [MQTT-3.2.2-8]
			Properties:     *properties,
		}
		return cl.Write(&ack)
	}

	if s.Options.Capabilities.MaximumQos < 2 {
		properties.MaximumQos = s.Options.Capabilities.MaximumQos // [MQTT-3.2.2-9]
		properties.MaximumQosFlag = true
	}
	announceCapabilities(s.Options.Capabilities, properties)

	if cl.Properties.Props.AssignedClientID != "" {
		properties.AssignedClientID = cl.Properties.Props.AssignedClientID // [MQTT-3.1.3-7] [MQTT-3.2.2-16]
	}

	if cl.Properties.Props.SessionExpiryInterval > s.Options.Capabilities.MaximumSessionExpiryInterval {
		properties.SessionExpiryInterval = s.Options.Capabilities.MaximumSessionExpiryInterval
		properties.SessionExpiryIntervalFlag = true
		cl.Properties.Props.SessionExpiryInterval = properties.SessionExpiryInterval
		cl.Properties.Props.SessionExpiryIntervalFlag = true
	}

	ack := packets.Packet{
		FixedHeader: packets.FixedHeader{
			Type: packets.Connack,
		},
		SessionPresent: present,
		ReasonCode:     reason.Code, // [MQTT-3.2.2-8]
		Properties:     *properties,
	}
	return cl.Write(&ack)
}

// announceCapabilities sets the properties of a successful CONNACK that
// announce caps: the maximum packet size the server accepts
// [MQTT-3.2.2-15], the topic aliases a client may use (absent: none
// [MQTT-3.2.2-17, -18]), and, when not available, retained messages,
// wildcard subscriptions, subscription identifiers and shared
// subscriptions (absent means available).
//
// dss: upstream announced none of them, though it enforced some.
func announceCapabilities(caps *Capabilities, properties *packets.Properties) {
	properties.MaximumPacketSize = caps.MaximumPacketSize
	properties.TopicAliasMaximum = caps.TopicAliasMaximum
	if caps.RetainAvailable == 0 {
		properties.RetainAvailable, properties.RetainAvailableFlag = 0, true
	}
	if caps.WildcardSubAvailable == 0 {
		properties.WildcardSubAvailable, properties.WildcardSubAvailableFlag = 0, true
	}
	if caps.SubIDAvailable == 0 {
		properties.SubIDAvailable, properties.SubIDAvailableFlag = 0, true
	}
	if caps.SharedSubAvailable == 0 {
		properties.SharedSubAvailable, properties.SharedSubAvailableFlag = 0, true
	}
}

// processConnect processes a Connect packet. The packet cannot be used to establish
// a new connection on an existing connection. See EstablishConnection instead.
func (s *Server) processConnect(cl *Client, _ *packets.Packet) error {
	s.sendLWT(cl)
	return packets.ErrProtocolViolationSecondConnect // [MQTT-3.1.0-2]
}

// UnsubscribeClient unsubscribes a client from all of their subscriptions.
func (s *Server) UnsubscribeClient(cl *Client) {
	i := 0
	filterMap := cl.State.Subscriptions.GetAll()
	filters := make([]packets.Subscription, len(filterMap))
	for k := range filterMap {
		cl.State.Subscriptions.Delete(k)
	}

	if cl.IsTakenOver() {
		return
	}

	for k, v := range filterMap {
		if s.Topics.Unsubscribe(k, cl.ID) {
			atomic.AddInt64(&s.Info.Subscriptions, -1)
		}
		filters[i] = v
		i++
	}
	if ev := s.Options.Subscriptions; ev != nil {
		ev.Unsubscribed(cl, &packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe}, Filters: filters})
	}
}

// processDisconnect processes a Disconnect packet.
func (s *Server) processDisconnect(cl *Client, pk *packets.Packet) error {
	if pk.Properties.SessionExpiryIntervalFlag {
		if pk.Properties.SessionExpiryInterval > 0 && cl.Properties.Props.SessionExpiryInterval == 0 {
			return packets.ErrProtocolViolationZeroNonZeroExpiry
		}

		cl.Properties.Props.SessionExpiryInterval = pk.Properties.SessionExpiryInterval
		cl.Properties.Props.SessionExpiryIntervalFlag = true
	}

	if pk.ReasonCode == packets.CodeDisconnectWillMessage.Code { // [MQTT-3.1.2.5] Non-normative comment
		return packets.CodeDisconnectWillMessage
	}

	s.loop.willDelayed.Delete(cl.ID) // [MQTT-3.1.3-9] [MQTT-3.1.2-8]
	cl.Stop(packets.CodeDisconnect)  // [MQTT-3.14.4-2]

	return nil
}

// DisconnectClient sends a Disconnect packet to a client and then closes the client connection.
func (s *Server) DisconnectClient(cl *Client, code packets.Code) error {
	out := packets.Packet{
		FixedHeader: packets.FixedHeader{
			Type: packets.Disconnect,
		},
		ReasonCode: code.Code,
		Properties: packets.Properties{},
	}

	if code.Code >= packets.ErrUnspecifiedError.Code {
		out.Properties.ReasonString = code.Reason //  // [MQTT-3.14.2-1]
	}

	// We already have a code we are using to disconnect the client, so we are not
	// interested if the write packet fails due to a closed connection (as we are closing it).
	err := cl.Write(&out)
	if !s.Options.Capabilities.Compatibilities.PassiveClientDisconnect {
		cl.stopAfterDisconnect(code) // dss: closes once the client read it
		if code.Code >= packets.ErrUnspecifiedError.Code {
			return code
		}
	}

	return err
}

// clearExpiredClients deletes all clients which have been disconnected for longer
// than their given expiry intervals.
func (s *Server) clearExpiredClients(dt int64) {
	s.sweep(func(client *Client) {
		disconnected := client.StopTime()
		if disconnected == 0 {
			return
		}

		expire := s.Options.Capabilities.MaximumSessionExpiryInterval
		if client.Properties.ProtocolVersion == 5 && client.Properties.Props.SessionExpiryIntervalFlag {
			expire = client.Properties.Props.SessionExpiryInterval
		}

		if disconnected+int64(expire) < dt {
			s.expireSession(client)
		}
	})
}

// expireSession ends the session of client, whose expiry interval has
// passed since its connection ended. dss: its messages are let go of
// (upstream left them to the garbage collector), under the lock of
// sessions, which a connection taking the session over holds.
func (s *Server) expireSession(client *Client) {
	s.sessionMu.Lock()
	defer s.sessionMu.Unlock()
	if client.IsTakenOver() {
		return
	}
	if ev := s.Options.Sessions; ev != nil {
		ev.SessionExpired(client)
	}
	s.Clients.Delete(client.ID) // [MQTT-4.1.0-2]
	client.ClearInflights()
	client.State.Inflight.detach()
}
