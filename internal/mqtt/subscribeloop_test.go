// SPDX-License-Identifier: MIT

//go:build linux

package mqtt

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// subscribeOnLoop is the option under test.
func subscribeOnLoop(o *Options) { o.SubscribeOnLoop = true }

// With Options.SubscribeOnLoop, a SUBSCRIBE is in force before a publish
// that another connection sent after it and that the read loop reads in
// the same round or the next: the loop serves both in their order. With
// one P, the two writes are made before the loop can run; a SUBSCRIBE
// handed back to its connection's goroutine was overtaken by the publish
// in every round, the goroutine not running before the loop's next turn.
func TestASubscribeComesIntoForceBeforeALaterPublishOfItsRound(t *testing.T) {
	if !ReadLoopsAvailable {
		t.Skip("no read loops here")
	}
	s, addr := loopServer(t, new(echoHook), 0, subscribeOnLoop)
	sub := dialLoop(t, addr, "sub", 30)
	pub := dialLoop(t, addr, "pub", 30)
	// Both in the loop's epoll set, not only marked parked: one added
	// after the writes would have its SUBSCRIBE read after the publish.
	require.Eventually(t, func() bool { return s.readLoops[0].Len() == 2 }, 5*time.Second, time.Millisecond)
	before := handedBack(s)

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for r := 0; r < 10; r++ {
		topic := fmt.Sprintf("round/%d", r)
		var subscribe, publish bytes.Buffer
		spk := packets.Packet{
			FixedHeader:     packets.FixedHeader{Type: packets.Subscribe, Qos: 1},
			ProtocolVersion: 5,
			PacketID:        uint16(r + 1),
			Filters:         packets.Subscriptions{{Filter: topic}},
		}
		require.NoError(t, spk.SubscribeEncode(&subscribe))
		ppk := packets.Packet{
			FixedHeader:     packets.FixedHeader{Type: packets.Publish},
			ProtocolVersion: 5,
			TopicName:       topic,
			Payload:         []byte("after the subscribe"),
		}
		require.NoError(t, ppk.PublishEncode(&publish))
		sub.write(subscribe.Bytes())
		pub.write(publish.Bytes())

		typ, _ := sub.read()
		require.Equal(t, packets.Suback, typ, "round %d", r)
		typ, body, err := sub.tryRead(2 * time.Second)
		require.NoError(t, err, "round %d: the publish sent after the SUBSCRIBE did not reach it", r)
		require.Equal(t, packets.Publish, typ)
		got := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, ProtocolVersion: 5}
		require.NoError(t, got.PublishDecode(body))
		require.Equal(t, topic, got.TopicName)
	}
	require.Equal(t, before, handedBack(s), "SUBSCRIBEs handed back to the connection's goroutine")

	// UNSUBSCRIBE the same way: a publish after it no longer arrives.
	var unsubscribe, publish bytes.Buffer
	upk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Unsubscribe, Qos: 1},
		ProtocolVersion: 5,
		PacketID:        100,
		Filters:         packets.Subscriptions{{Filter: "round/0"}},
	}
	require.NoError(t, upk.UnsubscribeEncode(&unsubscribe))
	ppk := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Publish},
		ProtocolVersion: 5,
		TopicName:       "round/0",
		Payload:         []byte("after the unsubscribe"),
	}
	require.NoError(t, ppk.PublishEncode(&publish))
	sub.write(unsubscribe.Bytes())
	pub.write(publish.Bytes())
	typ, _ := sub.read()
	require.Equal(t, packets.Unsuback, typ)
	_, _, err := sub.tryRead(200 * time.Millisecond)
	require.Error(t, err, "a publish sent after the UNSUBSCRIBE reached it")
	require.Equal(t, before, handedBack(s), "UNSUBSCRIBE handed back to the connection's goroutine")
}
