// SPDX-License-Identifier: MIT

package mqtt

import (
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/mqtt/packets/packettest"
)

// A session installed from another node is taken over by the connection
// that resumes it: Session Present, its subscriptions, and its queued
// messages sent as first deliveries.
func TestInstalledSessionIsResumed(t *testing.T) {
	s := newServer()
	defer s.Close()
	id := packettest.TPacketData[packets.Connect].Get(packettest.TConnectMqtt311).Packet.Connect.ClientIdentifier
	queued := *packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).Packet
	queued.Queued = true
	require.True(t, s.InstallSession(id, 4, 300, nil, []packets.Subscription{{Filter: "a/b/c", Qos: 1}}, []packets.Packet{queued}))
	require.False(t, s.InstallSession(id, 4, 300, nil, nil, nil), "a second session of the id")

	r, w := net.Pipe()
	o := make(chan error)
	go func() { o <- s.EstablishConnection("tcp", r) }()
	want := append(
		packettest.TPacketData[packets.Connack].Get(packettest.TConnackAcceptedSessionExists).RawBytes,
		packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).RawBytes...,
	)
	recv := make(chan []byte, 1)
	go func() {
		_, _ = w.Write(packettest.TPacketData[packets.Connect].Get(packettest.TConnectMqtt311).RawBytes)
		buf := make([]byte, len(want))
		n, _ := io.ReadFull(w, buf)
		_, _ = w.Write(packettest.TPacketData[packets.Disconnect].Get(packettest.TDisconnect).RawBytes)
		_, _ = io.ReadAll(w)
		recv <- buf[:n]
	}()
	require.NoError(t, <-o)
	require.Equal(t, want, <-recv)
	cl, ok := s.Clients.Get(id)
	require.True(t, ok)
	_, subscribed := cl.State.Subscriptions.Get("a/b/c")
	require.True(t, subscribed)
}

// fakeRemote records what the core tells the rest of a cluster.
type fakeRemote struct {
	mu      sync.Mutex
	changes []string
	routed  []string
	remote  []string // shared keys served elsewhere
	await   bool
	done    chan func()
	// routes are the topics the cluster's routes match; version
	// counts their changes.
	routes  map[string]bool
	version atomic.Uint64
}

func (f *fakeRemote) HasRoutes(topic string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.routes[topic]
}

func (f *fakeRemote) RoutesVersion() uint64 { return f.version.Load() }

func (f *fakeRemote) FilterChanged(filter string, present bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes = append(f.changes, fmt.Sprint(filter, " ", present))
}

func (f *fakeRemote) Route(pk *packets.Packet) Routed {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routed = append(f.routed, pk.TopicName)
	return f
}

func (f *fakeRemote) Serves(key string) bool { return !slices.Contains(f.remote, key) }

func (f *fakeRemote) Await(cl *Client, done func()) bool {
	if !f.await {
		return false
	}
	f.done <- done
	return true
}

func newRemoteServer(r *fakeRemote) *Server {
	cc := NewDefaultServerCapabilities()
	cc.MaximumMessageExpiryInterval = 0
	cc.ReceiveMaximum = 0
	s := New(&Options{Logger: logger, Capabilities: cc, Remote: r})
	s.Options.Access = allowAll{}
	return s
}

// The Remote hears of a filter when its first subscription arrives and
// when its last goes, not for the ones between; a shared subscription is
// named with the prefix in lower case.
func TestRemoteHearsOfTheFirstAndLastSubscriptionOfAFilter(t *testing.T) {
	r := &fakeRemote{}
	s := newRemoteServer(r)
	defer s.Close()
	s.Topics.Subscribe("a", packets.Subscription{Filter: "x/+"})
	s.Topics.Subscribe("b", packets.Subscription{Filter: "x/+"})
	s.Topics.Subscribe("a", packets.Subscription{Filter: "x/+"}) // again
	s.Topics.Unsubscribe("x/+", "a")
	s.Topics.Unsubscribe("x/+", "c") // never subscribed
	s.Topics.Unsubscribe("x/+", "b")
	s.Topics.Subscribe("a", packets.Subscription{Filter: "$SHARE/g/y"})
	s.Topics.Subscribe("b", packets.Subscription{Filter: "$share/g/y"})
	s.Topics.Unsubscribe("$SHARE/g/y", "a")
	s.Topics.Unsubscribe("$share/g/y", "b")
	require.Equal(t, []string{"x/+ true", "x/+ false", "$share/g/y true", "$share/g/y false"}, r.changes)
}

// A message routed from here is shown to the Remote, its shared
// subscriptions served elsewhere are not delivered here, and the PUBACK
// of a QoS 1 publish waits for the Remote.
func TestRemoteRoutesAndDefersTheAcknowledgement(t *testing.T) {
	r := &fakeRemote{await: true, done: make(chan func(), 1), remote: []string{"$share/elsewhere/a/b/c"}}
	s := newRemoteServer(r)
	defer s.Close()
	sender, rd, w := newTestClient()
	sender.ID = "sender"
	s.Clients.Add(sender)
	here, _, _ := newTestClient()
	here.ID = "here"
	s.Clients.Add(here)
	here.Stop(nil)
	s.Topics.Subscribe(here.ID, packets.Subscription{Filter: "$share/local/a/b/c", Qos: 1})
	other, _, _ := newTestClient()
	other.ID = "other"
	s.Clients.Add(other)
	other.Stop(nil)
	s.Topics.Subscribe(other.ID, packets.Subscription{Filter: "$share/elsewhere/a/b/c", Qos: 1})

	go func() {
		_ = s.processPacket(sender, packetCopy(*packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).Packet))
	}()
	done := <-r.done
	require.Equal(t, []string{"a/b/c"}, r.routed)
	require.Equal(t, 1, here.State.Inflight.Len(), "a shared subscription served here")
	require.Equal(t, 0, other.State.Inflight.Len(), "a shared subscription served elsewhere")
	ack := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(packettest.TPacketData[packets.Puback].Get(packettest.TPuback).RawBytes))
		_, _ = io.ReadFull(rd, b)
		ack <- b
	}()
	select {
	case <-ack:
		t.Fatal("PUBACK before the other nodes have the message")
	case <-time.After(50 * time.Millisecond):
	}
	done()
	require.Equal(t, packettest.TPacketData[packets.Puback].Get(packettest.TPuback).RawBytes, <-ack)
	_ = w.Close()
}

// A message from another node reaches the local subscribers, and is
// neither retained nor shown to the Remote again.
func TestDeliverRemoteIsNotRetainedNorRoutedAgain(t *testing.T) {
	r := &fakeRemote{}
	s := newRemoteServer(r)
	defer s.Close()
	away, _, _ := newTestClient()
	away.ID = "away"
	s.Clients.Add(away)
	away.Stop(nil)
	s.Topics.Subscribe(away.ID, packets.Subscription{Filter: "a/#", Qos: 1})
	pk := *packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).Packet
	pk.FixedHeader.Retain = true
	s.DeliverRemote(&pk, nil)
	require.Equal(t, 1, away.State.Inflight.Len())
	require.Empty(t, r.routed)
	require.Equal(t, 0, s.Topics.Retained.Len())
}

// A session handed to another node ends its connection with 0x8E, is
// removed with its subscriptions and its delayed will, and its messages
// go to the caller.
func TestTakeSessionHandsTheSessionOver(t *testing.T) {
	r := &fakeRemote{}
	s := newRemoteServer(r)
	defer s.Close()
	cl, rd, _ := newTestClient()
	cl.ID = "dev"
	cl.Properties.ProtocolVersion = 5
	s.Clients.Add(cl)
	s.Topics.Subscribe(cl.ID, packets.Subscription{Filter: "cmd", Qos: 1})
	cl.State.Subscriptions.Add("cmd", packets.Subscription{Filter: "cmd", Qos: 1})
	cl.State.Inflight.Set(packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).Packet)
	s.loop.willDelayed.Add(cl.ID, packets.Packet{TopicName: "will"}, cl)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(rd)
		got <- b
	}()
	var subs []packets.Subscription
	var inflight []packets.Packet
	require.False(t, s.TakeSession("dev", func(*Client) bool { return false }, nil), "refused by only")
	require.True(t, s.TakeSession("dev", nil, func(sb []packets.Subscription, in []packets.Packet) { subs, inflight = sb, in }))
	require.Len(t, subs, 1)
	require.Len(t, inflight, 1)
	_, ok := s.Clients.Get("dev")
	require.False(t, ok)
	require.Equal(t, 0, s.loop.willDelayed.Len())
	require.Equal(t, []string{"cmd true", "cmd false"}, r.changes)
	require.Equal(t, packettest.TPacketData[packets.Disconnect].Get(packettest.TDisconnectTakeover).RawBytes, <-got)
	require.False(t, s.TakeSession("dev", nil, nil), "nothing left to take")
}

// TestPublishAwaitingAllocatesNoPacketWithoutACluster: routing a QoS 1
// publish that no other node takes allocates what routing it allocates
// (publishToSubscribers), no copy of the publish or its
// acknowledgement; only a wait for other nodes keeps copies.
func TestPublishAwaitingAllocatesNoPacketWithoutACluster(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s := newServer()
	cl, _, _ := newTestClient()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, TopicName: "no/subscriber", PacketID: 1, Created: 1}
	ack := s.buildAck(pk.PacketID, packets.Puback, 0, pk.Properties, packets.CodeSuccess)
	// AllocsPerRun counts every goroutine's allocations: one pair of
	// measurements of a few that agree says so.
	var routing, awaiting float64
	for try := 0; try < 5; try++ {
		routing = testing.AllocsPerRun(20, func() { s.publishToSubscribers(&pk, nil) })
		awaiting = testing.AllocsPerRun(20, func() {
			if s.publishAwaiting(cl, &pk, &ack) {
				t.Error("nothing to await without a cluster")
			}
		})
		if routing == awaiting {
			break
		}
	}
	require.Equal(t, routing, awaiting)
}
