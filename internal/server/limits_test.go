package server_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/broker"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// restart stops s and starts a server on the same data directory.
func restart(t *testing.T, s *server.Server, cfg server.Config) *server.Server {
	t.Helper()
	stop(t, s)
	return dsstest.StartServer(t, cfg)
}

func TestMaxKeysRefusesTheKeyOnePastIt(t *testing.T) {
	cfg := server.Config{DataDir: t.TempDir(), MaxKeys: 3}
	s := dsstest.StartServer(t, cfg)
	c := dsstest.Dial(t, s.Addr(), "c")
	other := dsstest.Dial(t, s.Addr(), "other")
	for _, k := range []string{"k1", "k2", "k3"} {
		expect(t, "SET "+k, c.Set([]string{k, "v"}), "+OK\r\n", "any")
	}
	expect(t, "SET k4", c.Set([]string{"k4", "v"}), errPayload(wire.ErrQuotaExceeded), "")
	expect(t, "GET k4", other.Request(dsstest.Cmd("GET", "k4")), "$-1\r\n", "")
	expect(t, "overwrite at the limit", other.Set([]string{"k2", "v2"}), "+OK\r\n", "any")
	expect(t, "DEL at the limit", c.Request(dsstest.Cmd("DEL", "k1")), ":1\r\n", "any")
	expect(t, "SET k4 after the DEL", c.Set([]string{"k4", "v4"}), "+OK\r\n", "any")
	expect(t, "SET k5", c.Set([]string{"k5", "v"}), errPayload(wire.ErrQuotaExceeded), "")

	s = restart(t, s, cfg)
	c = dsstest.Dial(t, s.Addr(), "c2")
	for k, want := range map[string]string{"k1": "$-1\r\n", "k2": "$2\r\nv2\r\n", "k3": "$1\r\nv\r\n", "k4": "$2\r\nv4\r\n", "k5": "$-1\r\n"} {
		got := c.Request(dsstest.Cmd("GET", k))
		if string(got.Payload) != want {
			t.Fatalf("after the restart, GET %s: %q, want %q", k, got.Payload, want)
		}
	}
	expect(t, "SET k5 after the restart", c.Set([]string{"k5", "v"}), errPayload(wire.ErrQuotaExceeded), "")
}

func TestMaxStoreBytesRefusesTheByteOnePastIt(t *testing.T) {
	cfg := server.Config{DataDir: t.TempDir(), MaxStoreBytes: 20}
	s := dsstest.StartServer(t, cfg)
	c := dsstest.Dial(t, s.Addr(), "c")
	expect(t, "SET a", c.Set([]string{"a", "123456789"}), "+OK\r\n", "any")             // 10 bytes
	expect(t, "SET b", c.Set([]string{"b", "123456789"}), "+OK\r\n", "any")             // 20
	expect(t, "SET c", c.Set([]string{"c", ""}), errPayload(wire.ErrQuotaExceeded), "") // 21
	expect(t, "grow a", c.Set([]string{"a", "1234567890"}), errPayload(wire.ErrQuotaExceeded), "")
	expect(t, "shrink a", c.Set([]string{"a", "1"}), "+OK\r\n", "any")
	expect(t, "VDEL b", c.Request(dsstest.Cmd("VDEL", "b", "123456789")), ":1\r\n", "any")
	s = restart(t, s, cfg)
	c = dsstest.Dial(t, s.Addr(), "c2")
	expect(t, "GET a", c.Request(dsstest.Cmd("GET", "a")), "$1\r\n1\r\n", "any")
	expect(t, "GET b", c.Request(dsstest.Cmd("GET", "b")), "$-1\r\n", "")
	expect(t, "SET up to the limit", c.Set([]string{"b", strings.Repeat("x", 17)}), "+OK\r\n", "any")
	expect(t, "one byte past", c.Set([]string{"c", ""}), errPayload(wire.ErrQuotaExceeded), "")
}

func TestMaxKeySizeAndMaxValueSizeRefuseTheByteOnePastThem(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{DataDir: t.TempDir(), MaxKeySize: 8, MaxValueSize: 16})
	c := dsstest.Dial(t, s.Addr(), "c")
	key, longKey := strings.Repeat("k", 8), strings.Repeat("k", 9)
	value, longValue := strings.Repeat("v", 16), strings.Repeat("v", 17)
	expect(t, "SET at both limits", c.Set([]string{key, value}), "+OK\r\n", "any")
	tooLong := errPayload(wire.ErrKeyTooLong)
	expect(t, "SET long key", c.Set([]string{longKey, "v"}), tooLong, "")
	expect(t, "GET long key", c.Request(dsstest.Cmd("GET", longKey)), tooLong, "")
	expect(t, "DEL long key", c.Request(dsstest.Cmd("DEL", longKey)), tooLong, "")
	expect(t, "KEYNOTIFY long key", c.Request(dsstest.Cmd("KEYNOTIFY", longKey)), tooLong, "")
	expect(t, "SET long value", c.Set([]string{key, longValue}), errPayload(wire.ErrValueTooLong), "")
	expect(t, "VDEL long value", c.Request(dsstest.Cmd("VDEL", key, longValue)), errPayload(wire.ErrValueTooLong), "")
	expect(t, "GET after the refusals", c.Request(dsstest.Cmd("GET", key)), "$16\r\n"+value+"\r\n", "any")
}

func TestMaxKeyNotifyPerClientRefusesTheRegistrationOnePastIt(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{MaxWatchesPerClient: 2})
	w := watcher(t, s, "w", "a", "b")
	expect(t, "third KEYNOTIFY", w.Request(dsstest.Cmd("KEYNOTIFY", "c")), errPayload(wire.ErrQuotaExceeded), "")
	expect(t, "again an old one", w.Request(dsstest.Cmd("KEYNOTIFY", "a")), "+OK\r\n", "")
	other := watcher(t, s, "other", "c")
	writer := dsstest.Dial(t, s.Addr(), "writer")
	expect(t, "SET c", writer.Set([]string{"c", "1"}), "+OK\r\n", "any")
	expect(t, "SET a", writer.Set([]string{"a", "1"}), "+OK\r\n", "any")
	expectNotification(t, other, "c", notifySet("1"), "any")
	expectNotification(t, w, "a", notifySet("1"), "any") // nothing for c came first
	expect(t, "STOP a", w.Request(dsstest.Cmd("KEYNOTIFY", "a", "STOP")), "+OK\r\n", "")
	expect(t, "c once a is gone", w.Request(dsstest.Cmd("KEYNOTIFY", "c")), "+OK\r\n", "")
}

// TestTheLongestNotificationTopicFits: the longest key (16 KiB by
// default) and the longest client id the server accepts make a topic of
// at most 65,535 bytes, which is delivered; a longer client id is refused
// at CONNECT.
func TestTheLongestNotificationTopicFits(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	longest := broker.MaxClientIDSize(broker.DefaultMaxKeySize)
	id := strings.Repeat("i", longest)
	key := strings.Repeat("k", broker.DefaultMaxKeySize)
	if n := wire.NotifyTopicLen(len(id), len(key)); n > wire.MaxTopicLen || n < wire.MaxTopicLen-1 {
		t.Fatalf("the longest notification topic is %d bytes", n)
	}
	w := watcher(t, s, id, key)
	writer := dsstest.Dial(t, s.Addr(), "writer")
	expect(t, "SET", writer.Set([]string{key, "1"}), "+OK\r\n", "any")
	expectNotification(t, w, key, notifySet("1"), "any")

	conn, r := rawConnectRefused(t, s.Addr(), strings.Repeat("i", longest+1))
	defer conn.Close()
	if r != 0x85 {
		t.Fatalf("CONNECT with a client id of %d bytes: CONNACK %#x, want 0x85", longest+1, r)
	}
}

// rawConnectRefused sends a CONNECT of client id and returns the CONNACK's
// reason code.
func rawConnectRefused(t *testing.T, addr, id string) (net.Conn, byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, dsstest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(dsstest.Timeout))
	if _, err := conn.Write(rawConnect(id)); err != nil {
		t.Fatal(err)
	}
	typ, body, err := readPacket(bufio.NewReader(conn))
	if err != nil || typ != packets.Connack || len(body) < 2 {
		t.Fatalf("CONNACK: type %d, body %v, %v", typ, body, err)
	}
	return conn, body[1]
}

// TestMaxSubscriptionsPerClientRefusesTheFilterOnePastIt: a connection
// holds at most MaxSubscriptionsPerClient topic filters; a new filter past
// them gets SUBACK 0x97 (quota exceeded), in the same SUBACK as the ones
// granted before it. A filter it holds may be subscribed again, one
// unsubscribed makes room, and another client is not affected.
func TestMaxSubscriptionsPerClientRefusesTheFilterOnePastIt(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{MaxSubscriptionsPerClient: 3})
	c := dsstest.DialNoSubscribe(t, s.Addr(), "c")
	if got := c.SubscribeCodes("a", "b"); !bytes.Equal(got, []byte{1, 1}) {
		t.Fatalf("two filters: SUBACK %x", got)
	}
	if got := c.SubscribeCodes("c", "d", "a"); !bytes.Equal(got, []byte{1, 0x97, 1}) {
		t.Fatalf("one past the limit: SUBACK %x, want 01 97 01", got)
	}
	if _, err := c.Paho.Unsubscribe(context.Background(), &paho.Unsubscribe{Topics: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if got := c.SubscribeCodes("d"); !bytes.Equal(got, []byte{1}) {
		t.Fatalf("after an UNSUBSCRIBE: SUBACK %x", got)
	}
	other := dsstest.Dial(t, s.Addr(), "other")
	if got := other.SubscribeCodes("a", "b"); !bytes.Equal(got, []byte{1, 1}) {
		t.Fatalf("another client: SUBACK %x", got)
	}
	expect(t, "a request of the other client", other.Set([]string{"k", "v"}), "+OK\r\n", "any")
	other.Publish(&paho.Publish{Topic: "d", QoS: 1, Payload: []byte("to d")})
	if m := c.Next(); m.Topic != "d" || string(m.Payload) != "to d" {
		t.Fatalf("c got %s %q", m.Topic, m.Payload)
	}
}
