// SPDX-License-Identifier: MIT

package mqtt

import (
	"bytes"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// consumerHook records how it was handed each publish.
type consumerHook struct {
	HookBase
	id        string
	byValue   []string
	byPointer []string
}

func (h *consumerHook) ID() string           { return h.id }
func (h *consumerHook) Provides(b byte) bool { return b == OnPublish }

func (h *consumerHook) OnPublish(cl *Client, pk packets.Packet) (packets.Packet, error) {
	h.byValue = append(h.byValue, string(pk.Payload))
	return pk, packets.ErrRejectPacket
}

func (h *consumerHook) ConsumePublish(cl *Client, pk *packets.Packet) error {
	h.byPointer = append(h.byPointer, string(pk.Payload))
	return packets.ErrRejectPacket
}

// readPublishes has a client of s read the publishes given as topic and
// payload pairs, and returns when it has read them all.
func readPublishes(t *testing.T, s *Server, topicPayload ...string) {
	t.Helper()
	var pks []packets.Packet
	for i := 0; i < len(topicPayload); i += 2 {
		pks = append(pks, packets.Packet{
			FixedHeader: packets.FixedHeader{Type: packets.Publish},
			TopicName:   topicPayload[i],
			Payload:     []byte(topicPayload[i+1]),
		})
	}
	readPackets(t, s, nil, pks...)
}

// readPackets has a client of s, prepared by setup, read pks (encoded as
// MQTT 5), and returns the client when it has read them all.
func readPackets(t *testing.T, s *Server, setup func(*Client), pks ...packets.Packet) *Client {
	t.Helper()
	r, w := net.Pipe()
	cl := s.NewClient(w, "t", "reader", false)
	cl.Properties.ProtocolVersion = 5
	cl.State.Inflight.ResetReceiveQuota(10)
	if setup != nil {
		setup(cl)
	}
	done := make(chan error, 1)
	go func() { done <- cl.Read(s.receivePacket) }()
	for _, pk := range pks {
		pk.ProtocolVersion = 5
		var buf bytes.Buffer
		switch pk.FixedHeader.Type {
		case packets.Publish:
			require.NoError(t, pk.PublishEncode(&buf))
		case packets.Puback:
			require.NoError(t, pk.PubackEncode(&buf))
		}
		_, err := r.Write(buf.Bytes())
		require.NoError(t, err)
	}
	_ = r.Close()
	<-done
	cl.Stop(errClientStop)
	return cl
}

func TestServerConsumedTopicByPointer(t *testing.T) {
	s := newServer()
	s.Options.ConsumedTopic = "req"
	h := &consumerHook{id: "consumer"}
	require.NoError(t, s.AddHook(h, nil))

	readPublishes(t, s, "req", "one", "other", "two", "req", "three")
	require.Equal(t, []string{"one", "three"}, h.byPointer, "the consumed topic, by pointer")
	require.Equal(t, []string{"two"}, h.byValue, "any other, by value")

	// With another hook that takes publishes, both see every one through
	// OnPublish, as without the consumed topic.
	second := &consumerHook{id: "second"}
	require.NoError(t, s.AddHook(second, nil))
	h.byValue, h.byPointer = nil, nil
	readPublishes(t, s, "req", "four")
	require.Empty(t, h.byPointer)
	require.Equal(t, []string{"four"}, h.byValue)
	require.Empty(t, second.byValue, "the first hook rejected it")
}

// valueHook takes publishes by value only.
type valueHook struct {
	HookBase
	got []string
}

func (h *valueHook) ID() string           { return "value" }
func (h *valueHook) Provides(b byte) bool { return b == OnPublish }

func (h *valueHook) OnPublish(cl *Client, pk packets.Packet) (packets.Packet, error) {
	h.got = append(h.got, string(pk.Payload))
	return pk, nil
}

func TestServerConsumedTopicWithoutConsumer(t *testing.T) {
	s := newServer()
	s.Options.ConsumedTopic = "req"
	h := new(valueHook)
	require.NoError(t, s.AddHook(h, nil))
	readPublishes(t, s, "req", "one", "other", "two")
	require.Equal(t, []string{"one", "two"}, h.got)
	require.Equal(t, int64(2), s.Info.MessagesReceived)
}

// qosHook counts completed QoS flows.
type qosHook struct {
	HookBase
	completed []uint16
}

func (h *qosHook) ID() string           { return "qos" }
func (h *qosHook) Provides(b byte) bool { return b == OnQosComplete }

func (h *qosHook) OnQosComplete(cl *Client, pk packets.Packet) {
	h.completed = append(h.completed, pk.PacketID)
}

func TestServerPubackByPointer(t *testing.T) {
	s := newServer()
	s.Options.ConsumedTopic = "req"
	h := new(qosHook)
	require.NoError(t, s.AddHook(h, nil))
	puback := func(id uint16, props packets.Properties) packets.Packet {
		return packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: id, Properties: props}
	}
	cl := readPackets(t, s, func(cl *Client) {
		for _, id := range []uint16{7, 8, 9} {
			cl.State.Inflight.Set(&packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, PacketID: id})
		}
	},
		puback(7, packets.Properties{}),
		puback(5, packets.Properties{}), // not in flight: ignored
		puback(9, packets.Properties{ReasonString: "with properties"}),
	)
	require.Equal(t, []uint16{7, 9}, h.completed)
	require.False(t, cl.State.Inflight.Has(7))
	require.True(t, cl.State.Inflight.Has(8))
	require.False(t, cl.State.Inflight.Has(9))
}
