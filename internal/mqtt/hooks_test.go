// SPDX-License-Identifier: MIT

package mqtt

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/mqtt/packets/packettest"
)

// use sets h as each of the server's interfaces of hooks.go it
// implements.
func (s *Server) use(h any) {
	if a, ok := h.(Access); ok {
		s.Options.Access = a
	}
	if c, ok := h.(PublishConsumer); ok {
		s.Options.Consumer = c
	}
	if ev, ok := h.(SessionEvents); ok {
		s.Options.Sessions = ev
	}
	if ev, ok := h.(SubscriptionEvents); ok {
		s.Options.Subscriptions = ev
	}
	if ev, ok := h.(RetainEvents); ok {
		s.Options.Retained = ev
	}
}

// allowAll admits every connection, publish and subscription.
type allowAll struct{}

func (allowAll) Connect(*Client, *packets.Packet) error { return nil }
func (allowAll) Allow(*Client, string, bool) bool       { return true }

// denyAll refuses every connection, publish and subscription.
type denyAll struct{}

func (denyAll) Connect(*Client, *packets.Packet) error { return packets.ErrBadUsernameOrPassword }
func (denyAll) Allow(*Client, string, bool) bool       { return false }

// noSessionEvents hears no session event; a test's type embeds it for
// the events it does not record.
type noSessionEvents struct{}

func (noSessionEvents) SessionEstablishing(*Client, *packets.Packet) {}
func (noSessionEvents) SessionEstablished(*Client)                   {}
func (noSessionEvents) Disconnected(*Client, error, bool)            {}
func (noSessionEvents) SessionExpired(*Client)                       {}

var (
	_ Access             = allowAll{}
	_ Access             = denyAll{}
	_ SessionEvents      = noSessionEvents{}
	_ SessionEvents      = (*eventLog)(nil)
	_ SubscriptionEvents = (*eventLog)(nil)
	_ RetainEvents       = (*eventLog)(nil)
)

// eventLog records the events it hears, in order.
type eventLog struct {
	allowAll
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(event string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event)
}

func (l *eventLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

func (l *eventLog) SessionEstablishing(cl *Client, pk *packets.Packet) {
	l.add("establishing " + cl.ID)
}
func (l *eventLog) SessionEstablished(cl *Client) { l.add("established " + cl.ID) }
func (l *eventLog) Disconnected(cl *Client, err error, expire bool) {
	if expire {
		l.add("disconnected, expires " + cl.ID)
	} else {
		l.add("disconnected " + cl.ID)
	}
}
func (l *eventLog) SessionExpired(cl *Client) { l.add("expired " + cl.ID) }
func (l *eventLog) Subscribed(cl *Client, pk *packets.Packet, reasonCodes []byte) {
	l.add("subscribed " + pk.Filters[0].Filter + " " + string(rune('0'+reasonCodes[0])))
}
func (l *eventLog) Unsubscribed(cl *Client, pk *packets.Packet) {
	l.add("unsubscribed " + pk.Filters[0].Filter)
}
func (l *eventLog) Retained(cl *Client, pk *packets.Packet) {
	l.add("retained " + pk.TopicName + " " + string(pk.Payload))
}

func TestAServerWithoutAccessRefusesEveryConnection(t *testing.T) {
	s := New(&Options{Logger: logger})
	defer s.Close()
	code, err := connackOf(t, s, connectMqtt5WithoutAuthMethod(t))
	require.ErrorIs(t, err, packets.ErrBadUsernameOrPassword)
	require.Equal(t, packets.ErrBadUsernameOrPassword.Code, code)
	require.False(t, s.Options.allowed(new(Client), "a/b", true), "a publish was allowed without an Access")
	require.False(t, s.Options.allowed(new(Client), "a/b", false), "a delivery was allowed without an Access")
}

// TestEventsFollowASession: the session, subscription and retain events
// come as the session goes, each once.
func TestEventsFollowASession(t *testing.T) {
	s := newServer()
	defer s.Close()
	l := new(eventLog)
	s.use(l)

	cl, r, w := newTestClient()
	cl.ID = "zen"
	cl.Properties.ProtocolVersion = 5
	s.Clients.Add(cl)
	go func() { _, _ = io.Copy(io.Discard, r) }()
	defer w.Close()

	sub := *packettest.TPacketData[packets.Subscribe].Get(packettest.TSubscribe).Packet
	require.NoError(t, s.processSubscribe(cl, &sub))
	unsub := *packettest.TPacketData[packets.Unsubscribe].Get(packettest.TUnsubscribe).Packet
	require.NoError(t, s.processUnsubscribe(cl, &unsub))
	retained := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}, TopicName: "a/b", Payload: []byte("kept")}
	require.NoError(t, s.processPublish(cl, &retained))
	s.expireSession(cl)

	require.Equal(t, []string{
		"subscribed " + sub.Filters[0].Filter + " 0",
		"unsubscribed " + unsub.Filters[0].Filter,
		"retained a/b kept",
		"expired zen",
	}, l.got())
}

// TestEventsFollowAConnection: a connection is established, then
// disconnected; its session (with an expiry interval) stays.
func TestEventsFollowAConnection(t *testing.T) {
	s := newServer()
	defer s.Close()
	l := new(eventLog)
	s.use(l)

	r, w := net.Pipe()
	o := make(chan error, 1)
	go func() { o <- s.EstablishConnection("tcp", r) }()
	go func() {
		_, _ = w.Write(connectMqtt5WithoutAuthMethod(t))
		_, _ = w.Write(packettest.TPacketData[packets.Disconnect].Get(packettest.TDisconnect).RawBytes)
	}()
	go func() { _, _ = io.Copy(io.Discard, w) }()
	select {
	case err := <-o:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the connection did not end")
	}
	_ = w.Close()
	require.Equal(t, []string{"establishing zen", "established zen", "disconnected zen"}, l.got())
}
