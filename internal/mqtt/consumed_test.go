// SPDX-License-Identifier: MIT

package mqtt

import (
	"bytes"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// consumer records the payloads of the publishes it is handed, and
// consumes those of topic consumes.
type consumer struct {
	consumes string
	got      []string
}

func (c *consumer) ConsumePublish(cl *Client, pk *packets.Packet) error {
	c.got = append(c.got, string(pk.Payload))
	if pk.TopicName == c.consumes {
		return packets.ErrRejectPacket
	}
	return nil
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
	c := &consumer{consumes: "req"}
	s.Options.Consumer = c

	readPublishes(t, s, "req", "one", "other", "two", "req", "three")
	require.Equal(t, []string{"one", "two", "three"}, c.got, "the consumer is handed every publish")
	require.Equal(t, int64(3), s.Info.MessagesReceived)
}

func TestServerConsumedTopicWithoutConsumer(t *testing.T) {
	s := newServer()
	s.Options.ConsumedTopic = "req"
	readPublishes(t, s, "req", "one", "other", "two")
	require.Equal(t, int64(2), s.Info.MessagesReceived)
}

func TestServerPubackByPointer(t *testing.T) {
	s := newServer()
	s.Options.ConsumedTopic = "req"
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
	// The flows were set up without counting them in: two PUBACKs ended
	// one each, that of 5 none.
	require.Equal(t, int64(-2), s.Info.Inflight)
	require.False(t, cl.State.Inflight.Has(7))
	require.True(t, cl.State.Inflight.Has(8))
	require.False(t, cl.State.Inflight.Has(9))
}
