// SPDX-License-Identifier: MIT

package mqtt

import (
	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: a publish to Options.ConsumedTopic (a request to the state store)
// is read into a buffer of its connection's (consumedBody), and handed
// by pointer, as every packet read is (see Client.readPacket), to the
// hook that consumes it: no copy of the packet (800 bytes) is made on
// the way.

// PublishConsumer is a hook that takes the publishes it handles by
// pointer. When it is the only hook that provides OnPublish, publishes
// to Options.ConsumedTopic are handed to ConsumePublish instead of
// OnPublish; it returns what
// OnPublish would (ErrRejectPacket for a publish it took care of),
// having changed the packet in place instead of returning it. pk is
// valid until ConsumePublish returns.
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
func (cl *Client) packetRead(pk *packets.Packet) error {
	npk, err := cl.ops.hooks.OnPacketRead(cl, *pk)
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
