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
// packet of a pool, from the read loop to the Options.Consumer that
// consumes the request and to the inflight entry the PUBACK ends. The general path
// passes the packet (800 bytes) by value through a dozen calls; every
// copy is stack memory written per request, and with thousands of
// connections it is memory out of the cache, on every connection's own
// stack.

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
	if err == nil {
		if pk.FixedHeader.Type == packets.Publish {
			err = s.receiveConsumed(cl, pk)
		} else {
			err = s.receivePuback(cl, pk)
		}
	}
	*pk = packets.Packet{} // it refers to the connection's buffers
	fastPackets.Put(pk)
	return err
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
	if err := s.processPubackPtr(cl, pk); err != nil {
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

// receiveConsumed is receivePacket and processPacket for a publish to
// Options.ConsumedTopic.
func (s *Server) receiveConsumed(cl *Client, pk *packets.Packet) error {
	if code := pk.PublishValidate(s.Options.Capabilities.TopicAliasMaximum); code != packets.CodeSuccess {
		return s.packetFailed(cl, pk, code)
	}
	if err := s.processConsumed(cl, pk); err != nil {
		return s.packetFailed(cl, pk, err)
	}
	if atomic.LoadInt32(&cl.State.Inflight.sendQuota) > 0 {
		s.sendParked(cl)
	}
	return nil
}

// processConsumed is processPublish for a publish to
// Options.ConsumedTopic, handed to Options.Consumer by pointer.
func (s *Server) processConsumed(cl *Client, pk *packets.Packet) error {
	consumer := s.Options.Consumer
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
