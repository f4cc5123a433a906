package mqtt

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/mqtt/packets/packettest"
)

// refusingAccess refuses every connection with err.
type refusingAccess struct {
	allowAll
	err error
}

func (a *refusingAccess) Connect(*Client, *packets.Packet) error { return a.err }

// connackOf connects over a pipe with an MQTT 5 CONNECT and returns the
// reason code of the CONNACK the server answers with, and the error
// EstablishConnection returned.
func connackOf(t *testing.T, s *Server, connect []byte) (byte, error) {
	t.Helper()
	r, w := net.Pipe()
	defer w.Close()
	o := make(chan error, 1)
	go func() { o <- s.EstablishConnection("tcp", r) }()
	go func() { _, _ = w.Write(connect) }()
	recv := make(chan []byte, 1)
	go func() {
		buf, _ := io.ReadAll(w)
		recv <- buf
	}()
	err := <-o
	_ = r.Close()
	buf := <-recv
	require.GreaterOrEqual(t, len(buf), 4, "no CONNACK")
	require.Equal(t, byte(packets.Connack<<4), buf[0])
	return buf[3], err
}

func TestAnAccessRefusalIsAnsweredWithItsReasonCode(t *testing.T) {
	s := New(&Options{Logger: logger})
	defer s.Close()
	s.Options.Access = &refusingAccess{err: packets.ErrNotAuthorized}
	code, err := connackOf(t, s, connectMqtt5WithoutAuthMethod(t))
	require.ErrorIs(t, err, packets.ErrNotAuthorized)
	require.Equal(t, packets.ErrNotAuthorized.Code, code)
}

// aclAccess admits every connection and decides publishes and
// deliveries by deny: a topic or filter in it is refused, for reading and
// writing.
type aclAccess struct {
	deny map[string]bool
}

func (a *aclAccess) Connect(*Client, *packets.Packet) error { return nil }

func (a *aclAccess) Allow(cl *Client, topic string, write bool) bool { return !a.deny[topic] }

func aclServer(a Access) *Server {
	cc := NewDefaultServerCapabilities()
	cc.MaximumMessageExpiryInterval = 0
	cc.ReceiveMaximum = 0
	return New(&Options{Logger: logger, Capabilities: cc, Access: a})
}

func TestAWillOnATopicTheACLRefusesIsRefusedAtConnect(t *testing.T) {
	s := aclServer(&aclAccess{deny: map[string]bool{"lwt": true}})
	defer s.Close()
	code, err := connackOf(t, s, packettest.TPacketData[packets.Connect].Get(packettest.TConnectMqtt5LWT).RawBytes)
	require.ErrorIs(t, err, packets.ErrNotAuthorized)
	require.Equal(t, packets.ErrNotAuthorized.Code, code)
	require.Equal(t, 0, s.Clients.Len(), "the refused client was registered")
}

func TestAWillIsCheckedAgainWhenSent(t *testing.T) {
	// The ACL refuses the Will's topic by the time it is sent: it is not
	// published.
	h := &aclAccess{deny: map[string]bool{"lwt": true}}
	s := aclServer(h)
	defer s.Close()
	watcher, r, _ := newTestClient()
	watcher.ID = "watcher"
	s.Clients.Add(watcher)
	s.Topics.Subscribe(watcher.ID, packets.Subscription{Filter: "#", Qos: 0})

	cl, _, _ := newTestClient()
	cl.ID = "dying"
	cl.Properties.Will = Will{TopicName: "lwt", Payload: []byte("gone"), Flag: 1}
	s.sendLWT(cl)
	require.Equal(t, uint32(0), cl.Properties.Will.Flag, "the refused Will is still pending")

	// The same Will, allowed, is delivered, so the test would see one.
	delete(h.deny, "lwt")
	cl.Properties.Will.Flag = 1
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := r.Read(buf)
		got <- buf[:n]
	}()
	s.sendLWT(cl)
	select {
	case b := <-got:
		require.Contains(t, string(b), "lwt")
	case <-time.After(5 * time.Second):
		t.Fatal("the allowed Will was not delivered")
	}
}

func TestADelayedWillIsCheckedWhenItsDelayHasPassed(t *testing.T) {
	h := &aclAccess{deny: map[string]bool{}}
	s := aclServer(h)
	defer s.Close()
	watcher, r, _ := newTestClient()
	watcher.ID = "watcher"
	s.Clients.Add(watcher)
	s.Topics.Subscribe(watcher.ID, packets.Subscription{Filter: "#", Qos: 0})

	// Granted when the connection ends, refused once the delay passed:
	// not sent. The client left the list of clients meanwhile.
	cl, _, _ := newTestClient()
	cl.ID = "dying"
	cl.Properties.Will = Will{TopicName: "lwt", Payload: []byte("gone"), Flag: 1, WillDelayInterval: 1}
	s.sendLWT(cl)
	require.Equal(t, 1, s.loop.willDelayed.Len())
	h.deny["lwt"] = true
	s.sendDelayedLWT(time.Now().Unix() + 2)
	require.Equal(t, 0, s.loop.willDelayed.Len())

	// Granted then, it is sent.
	delete(h.deny, "lwt")
	cl.Properties.Will = Will{TopicName: "lwt", Payload: []byte("gone"), Flag: 1, WillDelayInterval: 1}
	s.sendLWT(cl)
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := r.Read(buf)
		got <- buf[:n]
	}()
	s.sendDelayedLWT(time.Now().Unix() + 2)
	select {
	case b := <-got:
		require.Contains(t, string(b), "lwt")
		require.Contains(t, string(b), "gone", "the first Will, refused, came instead")
	case <-time.After(5 * time.Second):
		t.Fatal("the allowed delayed Will was not delivered")
	}
}

func TestAWillOnTheConsumedTopicIsNeverSent(t *testing.T) {
	// A Will on the topic whose publishes the Consumer consumes is not
	// routed, where the consumer would never see it.
	s := aclServer(&aclAccess{})
	s.Options.ConsumedTopic = "consumed"
	defer s.Close()
	watcher, _, _ := newTestClient()
	watcher.ID = "watcher"
	s.Clients.Add(watcher)
	s.Topics.Subscribe(watcher.ID, packets.Subscription{Filter: "#", Qos: 0})
	cl, _, _ := newTestClient()
	cl.ID = "dying"
	cl.Properties.Will = Will{TopicName: "consumed", Payload: []byte("gone"), Flag: 1}
	s.sendLWT(cl)
	require.Equal(t, uint32(0), cl.Properties.Will.Flag, "the Will is still pending")
	require.Equal(t, int32(0), atomic.LoadInt32(&watcher.State.outboundQty), "the Will was routed")
}

func TestATakeoverResendsAndInheritsOnlyWhatTheNewConnectionMayRead(t *testing.T) {
	s := aclServer(&aclAccess{deny: map[string]bool{"a/b/c": true}})
	defer s.Close()

	old, r0, _ := newTestClient()
	old.Properties.ProtocolVersion = 5
	old.ID = "zen"
	old.State.Subscriptions.Add("a/b/c", packets.Subscription{Filter: "a/b/c", Qos: 1})
	old.State.Subscriptions.Add("ok/x", packets.Subscription{Filter: "ok/x", Qos: 1})
	old.State.Inflight.Set(packettest.TPacketData[packets.Publish].Get(packettest.TPublishQos1).Packet) // on a/b/c
	s.Clients.Add(old)
	oldDone := make(chan struct{})
	go func() {
		_, _ = io.ReadAll(r0)
		close(oldDone)
	}()
	defer func() {
		_ = r0.Close()
		<-oldDone
	}()

	r, w := net.Pipe()
	o := make(chan error, 1)
	go func() { o <- s.EstablishConnection("tcp", r) }()
	go func() {
		_, _ = w.Write(packettest.TPacketData[packets.Connect].Get(packettest.TConnectMqtt311).RawBytes) // zen, session kept
		time.Sleep(10 * time.Millisecond)
		_, _ = w.Write(packettest.TPacketData[packets.Disconnect].Get(packettest.TDisconnect).RawBytes)
	}()
	recv := make(chan []byte, 1)
	go func() {
		buf, _ := io.ReadAll(w)
		recv <- buf
	}()
	require.NoError(t, <-o)
	// The CONNACK alone: the message on a/b/c was not resent.
	require.Equal(t, packettest.TPacketData[packets.Connack].Get(packettest.TConnackAcceptedSessionExists).RawBytes, <-recv)

	cl, ok := s.Clients.Get("zen")
	require.True(t, ok)
	_, inherited := cl.State.Subscriptions.Get("a/b/c")
	require.False(t, inherited, "a subscription the ACL refuses was inherited")
	_, inherited = cl.State.Subscriptions.Get("ok/x")
	require.True(t, inherited, "an allowed subscription was not inherited")
	require.Equal(t, 0, cl.State.Inflight.Len(), "the refused message stayed in flight")
	_ = w.Close()
}

func TestMayTakeOverRefusesWithClientIdentifierNotValid(t *testing.T) {
	s := aclServer(&aclAccess{})
	defer s.Close()
	s.Options.MayTakeOver = func(existing, cl *Client) bool { return false }
	old, _, _ := newTestClient()
	old.ID = "zen"
	s.Clients.Add(old)

	code, err := connackOf(t, s, connectMqtt5WithoutAuthMethod(t)) // zen
	require.ErrorIs(t, err, packets.ErrClientIdentifierNotValid)
	require.Equal(t, packets.ErrClientIdentifierNotValid.Code, code)
	cl, ok := s.Clients.Get("zen")
	require.True(t, ok)
	require.Same(t, old, cl, "the existing session was replaced")
	require.False(t, old.IsTakenOver())
	require.False(t, old.Closed())
}

// connectMqtt5WithoutAuthMethod is the test MQTT 5 CONNECT without its
// Authentication Method and Data, which the server refuses with 0x8C
// (FORK.md 52).
func connectMqtt5WithoutAuthMethod(t *testing.T) []byte {
	pk := *packettest.TPacketData[packets.Connect].Get(packettest.TConnectMqtt5).Packet
	pk.Properties.AuthenticationMethod, pk.Properties.AuthenticationData = "", nil
	var buf bytes.Buffer
	require.NoError(t, pk.ConnectEncode(&buf))
	return buf.Bytes()
}

func TestAConnectNamingAnAuthenticationMethodIsRefused(t *testing.T) {
	s := New(&Options{Logger: logger})
	defer s.Close()
	s.Options.Access = allowAll{}
	code, err := connackOf(t, s, packettest.TPacketData[packets.Connect].Get(packettest.TConnectMqtt5).RawBytes)
	require.ErrorIs(t, err, packets.ErrBadAuthenticationMethod)
	require.Equal(t, packets.ErrBadAuthenticationMethod.Code, code)
}

// publishingAccess records the topics of the publishes it is asked
// about, and refuses those in deny.
type publishingAccess struct {
	aclAccess
	checked []string
}

func (h *publishingAccess) Allow(cl *Client, topic string, write bool) bool {
	if write {
		h.checked = append(h.checked, topic)
	}
	return !h.deny[topic]
}

func TestAPublishThroughATopicAliasIsCheckedAgainstItsTopic(t *testing.T) {
	h := &publishingAccess{aclAccess: aclAccess{deny: map[string]bool{"": true, "secret": true}}}
	s := New(&Options{Logger: logger, Access: h})
	defer s.Close()
	cl, _, _ := newTestClient()
	cl.Properties.ProtocolVersion = 5
	cl.State.TopicAliases.Inbound = NewInboundTopicAliases(10)

	publish := func(topic string, alias uint16) (string, bool) {
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: topic,
			Properties: packets.Properties{TopicAlias: alias, TopicAliasFlag: true}}
		done, _ := s.admitPublish(cl, &pk)
		return pk.TopicName, !done
	}
	topic, ok := publish("a/b", 1)
	require.True(t, ok, "the publish that sets an alias of an allowed topic was refused")
	require.Equal(t, "a/b", topic)
	topic, ok = publish("", 1)
	require.True(t, ok, "a publish through the alias of an allowed topic was refused")
	require.Equal(t, "a/b", topic)
	_, ok = publish("secret", 2)
	require.False(t, ok, "a publish on a refused topic was admitted")
	_, ok = publish("", 2)
	require.False(t, ok, "a publish through the alias of a refused topic was admitted")
	require.Equal(t, []string{"a/b", "a/b", "secret", "secret"}, h.checked, "the topics the ACL was asked about")
}
