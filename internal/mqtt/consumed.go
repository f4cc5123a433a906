// SPDX-License-Identifier: MIT

package mqtt

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: a publish to Options.ConsumedTopic (a request to the state store)
// and a PUBACK (of a response) are read and handled by pointer, in a
// packet of a pool, from the read loop to the hook that consumes the
// request and to the inflight entry the PUBACK ends. The general path
// passes the packet (800 bytes) by value through a dozen calls; every
// copy is stack memory written per request, and with thousands of
// connections it is memory out of the cache, on every connection's own
// stack.

// PublishConsumer is a hook that takes the publishes it handles by
// pointer. When it is the only hook that provides OnPublish, publishes to
// Options.ConsumedTopic are handed to ConsumePublish instead of OnPublish;
// it returns what OnPublish would (ErrRejectPacket for a publish it took
// care of), having changed the packet in place instead of returning it.
// pk is valid until ConsumePublish returns.
type PublishConsumer interface {
	ConsumePublish(cl *Client, pk *packets.Packet) error
}

// publishConsumer returns the hook that provides OnPublish if it is the
// only one and a PublishConsumer.
func (h *Hooks) publishConsumer() PublishConsumer {
	var found PublishConsumer
	for _, hook := range h.GetAll() {
		if !hook.Provides(OnPublish) {
			continue
		}
		c, ok := hook.(PublishConsumer)
		if !ok || found != nil {
			return nil
		}
		found = c
	}
	return found
}

// fastPackets holds the packets readFast decodes into; they are handled
// synchronously and kept by nobody.
var fastPackets = sync.Pool{New: func() any { return new(packets.Packet) }}

// readFast reads and handles a PUBACK or a publish to
// Options.ConsumedTopic whose fixed header fh was read.
func (s *Server) readFast(cl *Client, fh packets.FixedHeader) error {
	pk := fastPackets.Get().(*packets.Packet)
	var err error
	if fh.Type == packets.Publish {
		err = cl.readConsumedPacket(fh, pk)
	} else {
		err = cl.readAckPacket(fh, pk)
	}
	if err == nil && s.hooks.Provides(OnPacketRead) {
		err = s.packetRead(cl, pk)
	}
	if err == nil {
		switch pk.FixedHeader.Type { // as an OnPacketRead hook left it
		case packets.Publish:
			err = s.receiveConsumed(cl, pk)
		case packets.Puback:
			err = s.receivePuback(cl, pk)
		default:
			err = s.receivePacketCopy(cl, pk)
		}
	}
	*pk = packets.Packet{} // it refers to the connection's buffers
	fastPackets.Put(pk)
	return err
}

// receivePacketCopy runs the general receivePacket on a copy of pk.
//
//go:noinline
func (s *Server) receivePacketCopy(cl *Client, pk *packets.Packet) error {
	return s.receivePacket(cl, *pk)
}

// readAckPacket reads the body of a PUBACK and decodes it into pk, as
// ReadPacket does.
func (cl *Client) readAckPacket(fh packets.FixedHeader, pk *packets.Packet) error {
	pk.ProtocolVersion = cl.Properties.ProtocolVersion
	pk.FixedHeader = fh
	var body []byte
	if fh.Remaining <= len(cl.Net.ackBuf) { // no properties
		body = cl.Net.ackBuf[:fh.Remaining]
	} else {
		body = make([]byte, fh.Remaining)
	}
	n, err := io.ReadFull(cl.Net.bconn, body)
	if err != nil {
		return err
	}
	atomic.AddInt64(&cl.ops.info.BytesReceived, int64(n))
	return packetError(&fh, fh.Remaining, pk.PubackDecode(body))
}

// receivePuback is receivePacket and processPacket for a PUBACK.
func (s *Server) receivePuback(cl *Client, pk *packets.Packet) error {
	err := s.processPubackPtr(cl, pk)
	if s.hooks.Provides(OnPacketProcessed) {
		s.packetProcessed(cl, pk, err)
	}
	if err != nil {
		return s.packetFailed(cl, pk, err)
	}
	if atomic.LoadInt32(&cl.State.Inflight.sendQuota) > 0 {
		s.sendParked(cl)
	}
	return nil
}

// readConsumedPacket reads the body of a publish to Options.ConsumedTopic
// into the connection's buffer and decodes it into pk, as ReadPacket does.
func (cl *Client) readConsumedPacket(fh packets.FixedHeader, pk *packets.Packet) error {
	pk.ProtocolVersion = cl.Properties.ProtocolVersion
	pk.FixedHeader = fh
	body := cl.consumedBody(fh.Remaining)
	n, err := io.ReadFull(cl.Net.bconn, body)
	if err != nil {
		return err
	}
	atomic.AddInt64(&cl.ops.info.BytesReceived, int64(n))
	if err := cl.decodePublish(pk, body, true); err != nil {
		return packetError(&fh, fh.Remaining, err)
	}
	atomic.AddInt64(&cl.ops.info.MessagesReceived, 1)
	return nil
}

// consumedBody returns the connection's buffer for the body of a publish
// to Options.ConsumedTopic, of n bytes.
func (cl *Client) consumedBody(n int) []byte {
	if cap(cl.Net.consumedBuf) < n {
		cl.Net.consumedBuf = make([]byte, max(n, 512))
	}
	return cl.Net.consumedBuf[:n]
}

// packetRead runs the OnPacketRead hooks on pk.
//
//go:noinline
func (s *Server) packetRead(cl *Client, pk *packets.Packet) error {
	npk, err := s.hooks.OnPacketRead(cl, *pk)
	if err == nil {
		*pk = npk
	}
	return err
}

// packetProcessed runs the OnPacketProcessed hooks.
//
//go:noinline
func (s *Server) packetProcessed(cl *Client, pk *packets.Packet, err error) {
	s.hooks.OnPacketProcessed(cl, *pk, err)
}

// receiveConsumed is receivePacket and processPacket for a publish to
// Options.ConsumedTopic.
func (s *Server) receiveConsumed(cl *Client, pk *packets.Packet) error {
	if code := pk.PublishValidate(s.Options.Capabilities.TopicAliasMaximum); code != packets.CodeSuccess {
		return s.packetFailed(cl, pk, code)
	}
	err := s.processConsumed(cl, pk)
	if s.hooks.Provides(OnPacketProcessed) {
		s.packetProcessed(cl, pk, err)
	}
	if err != nil {
		return s.packetFailed(cl, pk, err)
	}
	if atomic.LoadInt32(&cl.State.Inflight.sendQuota) > 0 {
		s.sendParked(cl)
	}
	return nil
}

// processConsumed is processPublish for a publish to
// Options.ConsumedTopic, handed to the hook by pointer when one
// PublishConsumer is the only hook that provides OnPublish.
func (s *Server) processConsumed(cl *Client, pk *packets.Packet) error {
	consumer := s.hooks.publishConsumer()
	if consumer == nil || pk.Properties.TopicAliasFlag {
		return s.processPublishCopy(cl, pk)
	}
	if done, err := s.admitPublish(cl, pk); done {
		return err
	}
	return s.publishOutcome(cl, pk, consumer.ConsumePublish(cl, pk))
}

// publishAcceptedCopy runs publishAccepted on a copy of pk.
//
//go:noinline
func (s *Server) publishAcceptedCopy(cl *Client, pk *packets.Packet) error {
	return s.publishAccepted(cl, *pk)
}

// processPublishCopy runs the general processPublish on a copy of pk.
//
//go:noinline
func (s *Server) processPublishCopy(cl *Client, pk *packets.Packet) error {
	return s.processPublish(cl, *pk)
}
