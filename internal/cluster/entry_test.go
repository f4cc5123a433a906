package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/dssio/dss/internal/bincode"
	"math"
	"net"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

func TestWritesRoundTrip(t *testing.T) {
	op := &engine.Op{Client: "client-1", Correlation: []byte{1, 2, 3}}
	in := []engine.Write{
		{Op: op, Command: store.Command{
			Op: store.OpSet, Key: []byte("k"), Value: []byte("v"), Cond: store.IfMissingOrEqual,
			Time: 1700000000000, ExpiresAt: 1700000060000,
			Version: hlc.Timestamp{Wall: 1700000000000, Counter: 3, Node: "n1"},
			Fence:   hlc.Timestamp{Wall: 1699999999999, Counter: 1, Node: "lock"}, HasFence: true,
		}, ExpireVersion: hlc.Timestamp{Wall: 1700000000000, Counter: 2, Node: "n1"}},
		{Command: store.Command{Op: store.OpExpire, Key: []byte("gone"), Time: 1700000000001,
			Version: hlc.Timestamp{Wall: 1700000000001, Node: "n1"}}},
	}
	b := binary.AppendUvarint(nil, uint64(len(in)))
	for i := range in {
		b = appendWrite(b, origin{node: "n1", epoch: 7, id: uint64(i + 1)}, &in[i])
	}
	out, err := decodeWrites(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("%d writes decoded", len(out))
	}
	if o := out[0].origin; o != (origin{node: "n1", epoch: 7, id: 1}) {
		t.Fatalf("origin %+v", o)
	}
	if out[0].dedupe == "" || out[1].dedupe != "" {
		t.Fatalf("dedupe keys %q %q", out[0].dedupe, out[1].dedupe)
	}
	for i := range in {
		a, b := in[i], out[i].write
		if a.Command.Op != b.Command.Op || !bytes.Equal(a.Command.Key, b.Command.Key) || !bytes.Equal(a.Command.Value, b.Command.Value) ||
			a.Command.Cond != b.Command.Cond || a.Command.Time != b.Command.Time || a.Command.ExpiresAt != b.Command.ExpiresAt ||
			a.Command.Version != b.Command.Version || a.ExpireVersion != b.ExpireVersion ||
			a.Command.HasFence != b.Command.HasFence || a.Command.Fence != b.Command.Fence {
			t.Fatalf("write %d: %+v decoded as %+v", i, a, b)
		}
	}
	// Every truncation is refused, never misread.
	for n := 0; n < len(b); n++ {
		if _, err := decodeWrites(b[:n], nil); err == nil {
			t.Fatalf("a batch cut to %d of %d bytes decoded", n, len(b))
		}
	}
}

func TestDedupeKeysDoNotCollide(t *testing.T) {
	set := func(key, value string) *store.Command {
		return &store.Command{Op: store.OpSet, Key: []byte(key), Value: []byte(value), Time: 1000}
	}
	if dedupeKey([]byte("ab"), []byte("c"), set("k", "v")) == dedupeKey([]byte("a"), []byte("bc"), set("k", "v")) {
		t.Fatal("client id and correlation data run together")
	}
	if dedupeKey([]byte("a"), []byte("c"), set("k", "v")) == dedupeKey([]byte("a"), []byte("c"), set("kv", "")) {
		t.Fatal("key and value run together")
	}
	same := dedupeKey([]byte("a"), []byte("c"), set("k", "v"))
	for name, c := range map[string]*store.Command{
		"another key":   set("k2", "v"),
		"another value": set("k", "v2"),
		"a condition":   {Op: store.OpSet, Cond: store.IfMissing, Key: []byte("k"), Value: []byte("v"), Time: 1000},
		"an expiry":     {Op: store.OpSet, Key: []byte("k"), Value: []byte("v"), Time: 1000, ExpiresAt: 2000},
		"a token":       {Op: store.OpSet, Key: []byte("k"), Value: []byte("v"), Time: 1000, HasFence: true},
		"a DEL":         {Op: store.OpDel, Key: []byte("k"), Time: 1000},
	} {
		if dedupeKey([]byte("a"), []byte("c"), c) == same {
			t.Errorf("a request with %s is taken for the same request", name)
		}
	}
	// A retry decided at another time, with the same PX, is the same
	// request.
	later := &store.Command{Op: store.OpSet, Key: []byte("k"), Value: []byte("v"), Time: 5000, ExpiresAt: 6000}
	if dedupeKey([]byte("a"), []byte("c"), later) != dedupeKey([]byte("a"), []byte("c"), &store.Command{Op: store.OpSet, Key: []byte("k"), Value: []byte("v"), Time: 1000, ExpiresAt: 2000}) {
		t.Error("a retry decided later is taken for another request")
	}
}

func TestDedupePrunesByCommandTime(t *testing.T) {
	d := newDedupe(1000)
	d.add("a", 100, engine.Result{Outcome: store.Applied})
	d.add("b", 600, engine.Result{Outcome: store.NotMet, Err: wire.ErrFencingLower})
	d.prune(1200) // a is older than the window, b not
	if _, ok := d.get("a"); ok {
		t.Fatal("an entry older than the window is kept")
	}
	if r, ok := d.get("b"); !ok || r.Outcome != store.NotMet {
		t.Fatal("an entry within the window is gone")
	}
	// The table survives a snapshot.
	dec := newDecoder(d.appendTo(nil))
	e := decodeDedupe(&dec, 1000)
	if r, ok := e.get("b"); !ok || r.Err != wire.ErrFencingLower || e.len() != 1 {
		t.Fatalf("after encoding: %+v %v, %d entries", r, ok, e.len())
	}
}

func TestParsePeers(t *testing.T) {
	p, err := ParsePeers("n1=127.0.0.1:7001, n2=127.0.0.1:7002,n3=[::1]:7003")
	if err != nil || len(p) != 3 || p[2] != (Peer{ID: "n3", Addr: "[::1]:7003"}) {
		t.Fatalf("%+v %v", p, err)
	}
	for _, bad := range []string{"", "n1", "n1=", "=127.0.0.1:1", "n1=nohost", "n1=127.0.0.1:1,n1=127.0.0.1:2"} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("ParsePeers(%q) accepted", bad)
		}
	}
}

func TestANonLoopbackListenerNeedsASecret(t *testing.T) {
	cfg := Config{NodeID: "n1", Listen: "0.0.0.0:7946", DataDir: t.TempDir()}
	if err := cfg.setDefaults(); !errors.Is(err, ErrNoSecret) {
		t.Fatalf("no secret on 0.0.0.0: %v", err)
	}
	cfg = Config{NodeID: "n1", Listen: "127.0.0.1:7946", DataDir: t.TempDir()}
	if err := cfg.setDefaults(); err != nil {
		t.Fatalf("no secret on loopback: %v", err)
	}
	if _, err := tlsFromSecret([]byte("short")); err == nil {
		t.Fatal("a 5-byte secret is accepted")
	}
}

// TestOnlyHoldersOfTheSecretConnect: the handshake fails both ways between
// different secrets, and works with the same.
func TestOnlyHoldersOfTheSecretConnect(t *testing.T) {
	good, _ := tlsFromSecret([]byte("0123456789abcdef-good"))
	bad, _ := tlsFromSecret([]byte("0123456789abcdef-bad!"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan net.Conn, 4)
	m := newMux(ln, good, quietLogger(), func(c net.Conn) { served <- c; <-time.After(time.Second); c.Close() })
	m.wg.Add(1)
	go m.serve()
	defer m.Close()
	intruder := &mux{tls: bad, log: quietLogger()}
	if c, err := intruder.dial(ln.Addr().String(), connRPC, time.Second); err == nil {
		// TLS 1.3 may report the server's refusal only on the first read.
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("a connection with the wrong secret was served")
		}
		c.Close()
	}
	member := &mux{tls: good, log: quietLogger()}
	c, err := member.dial(ln.Addr().String(), connRPC, time.Second)
	if err != nil {
		t.Fatalf("a member with the secret: %v", err)
	}
	defer c.Close()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("the member's connection was not served")
	}
}

// A version whose counter does not fit its 32 bits is refused as damage,
// not cut down to another version.
func TestAVersionCounterWiderThan32BitsIsRefused(t *testing.T) {
	b := binary.AppendVarint(nil, 1700000000000)
	b = binary.AppendUvarint(b, 1<<32+5)
	b = bincode.AppendString(b, "n1")
	d := newDecoder(b)
	if v := d.Stamp(); d.Err() == nil {
		t.Fatalf("decoded as %+v", v)
	}
	b = bincode.AppendStamp(nil, hlc.Timestamp{Wall: 1700000000000, Counter: math.MaxUint32, Node: "n1"})
	d = newDecoder(b)
	if v := d.Stamp(); d.Err() != nil || v.Counter != math.MaxUint32 {
		t.Fatalf("the widest counter: %+v, %v", v, d.Err())
	}
}
