package client

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// TestWatchSurvivesServerRestart restarts the server under a watch: the
// client reconnects to the same address, registers again, reports the
// key's state on the new server (missing: it keeps data in memory), then
// the changes made there.
func TestWatchSurvivesServerRestart(t *testing.T) {
	addr := freeAddr(t)
	s1 := startAt(t, addr)
	c := dial(t, addr)
	w, err := c.Watch(ctxT(t), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctxT(t))
	mustSet(t, c, "k", "before")
	expectEvent(t, nextEvent(t, w), "k", OpSet, "before", false)

	s1.stop()
	startAt(t, addr)

	e := nextEvent(t, w)
	expectEvent(t, e, "k", OpDelete, "", true)
	if !e.Version.IsZero() {
		t.Fatalf("state of a missing key with version %v", e.Version)
	}
	mustSet(t, c, "k", "after")
	expectEvent(t, nextEvent(t, w), "k", OpSet, "after", false)
	if _, err := c.Del(ctxT(t), "k"); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, nextEvent(t, w), "k", OpDelete, "", false)
}

// TestResyncReportsChangesMadeWhileAway changes the key on the new server
// before the watching client is back: the resync reports the new value.
func TestResyncReportsChangesMadeWhileAway(t *testing.T) {
	addr := freeAddr(t)
	s1 := startAt(t, addr)
	cfg := testConfig(addr)
	// Slow to come back, so that the change below lands first.
	cfg.MinBackoff, cfg.MaxBackoff = 300*time.Millisecond, 300*time.Millisecond
	c := dialConfig(t, cfg)
	w, err := c.Watch(ctxT(t), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctxT(t))

	s1.stop()
	s2 := startAt(t, addr)
	other := dial(t, s2.Addr())
	v := mustSet(t, other, "k", "while away").Version

	e := nextEvent(t, w)
	if e.Resync && e.Op == OpDelete {
		// The client reconnected before the SET landed: the change
		// follows as a notification.
		e = nextEvent(t, w)
	}
	if e.Op != OpSet || string(e.Value) != "while away" || e.Version != v {
		t.Fatalf("event %+v (value %q), want the value set while away at %v", e, e.Value, v)
	}
}

// TestFailover gives the client two servers and kills the first: requests
// and watches carry on on the second.
func TestFailover(t *testing.T) {
	a := startAt(t, "127.0.0.1:0")
	b := startAt(t, "127.0.0.1:0")
	c := dial(t, a.Addr(), b.Addr())
	if got := c.Server(); got != a.Addr() {
		t.Fatalf("connected to %q, want the first server %q", got, a.Addr())
	}
	w, err := c.Watch(ctxT(t), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctxT(t))
	mustSet(t, c, "k", "on a")
	expectEvent(t, nextEvent(t, w), "k", OpSet, "on a", false)

	a.stop()
	// A read issued at once waits for the next connection.
	if _, found, err := c.Get(ctxT(t), "k"); err != nil || found {
		t.Fatalf("Get during failover: found %v, err %v; want the second server's empty store", found, err)
	}
	if got := c.Server(); got != b.Addr() {
		t.Fatalf("connected to %q, want the second server %q", got, b.Addr())
	}
	expectEvent(t, nextEvent(t, w), "k", OpDelete, "", true)
	mustSet(t, c, "k", "on b")
	expectEvent(t, nextEvent(t, w), "k", OpSet, "on b", false)
	other := dial(t, b.Addr())
	if e, _, err := other.Get(ctxT(t), "k"); err != nil || string(e.Value) != "on b" {
		t.Fatalf("the write did not land on the second server: %q %v", e.Value, err)
	}
}

// TestDialFailsOverToALiveServer starts with the first server down.
func TestDialFailsOverToALiveServer(t *testing.T) {
	dead := freeAddr(t)
	b := startAt(t, "127.0.0.1:0")
	c := dial(t, dead, b.Addr())
	if c.Server() != b.Addr() {
		t.Fatalf("connected to %q, want %q", c.Server(), b.Addr())
	}
	mustSet(t, c, "k", "v")
}

// TestDialGivesUp checks that Dial reports the connection error when no
// server answers within the context.
func TestDialGivesUp(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 300)
	defer cancel()
	_, err := Dial(ctx, testConfig(freeAddr(t)))
	if err == nil || !errors.Is(err, ctx.Err()) {
		t.Fatalf("Dial to nothing: %v", err)
	}
}

// TestDialRounds checks that Dial with DialRounds returns once every
// server refused, long before its context ends, and that a live server
// in the list is still found.
func TestDialRounds(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60_000)
	defer cancel()
	cfg := testConfig(freeAddr(t), freeAddr(t))
	cfg.DialRounds = 1
	_, err := Dial(ctx, cfg)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "connection refused") || ctx.Err() != nil {
		t.Fatalf("Dial to two refusing servers: %v (context: %v)", err, ctx.Err())
	}
	b := startAt(t, "127.0.0.1:0")
	cfg = testConfig(freeAddr(t), b.Addr())
	cfg.DialRounds = 1
	c, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial with one live server: %v", err)
	}
	defer c.Close()
	mustSet(t, c, "k", "v")
}

// TestRequestWaitsForReconnect sends a write while the only server is
// down; it goes out once the server is back.
func TestRequestWaitsForReconnect(t *testing.T) {
	addr := freeAddr(t)
	s1 := startAt(t, addr)
	c := dial(t, addr)
	s1.stop()
	dsstest.Eventually(t, "the client notices the server is gone", func() bool { return c.Server() == "" })
	done := make(chan error, 1)
	go func() {
		_, err := c.Set(ctxT(t), "k", []byte("v"))
		done <- err
	}()
	startAt(t, addr)
	if err := <-done; err != nil {
		t.Fatalf("Set across the restart: %v", err)
	}
	if e, _, err := c.Get(ctxT(t), "k"); err != nil || string(e.Value) != "v" {
		t.Fatalf("Get: %q %v", e.Value, err)
	}
}
