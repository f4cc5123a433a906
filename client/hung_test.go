package client

import (
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// TestAHungServerIsNoticed watches a key through a proxy that then
// swallows every byte, as a hung server looks: the client notices within
// about twice its PingTimeout (not the minute or more a keep alive alone
// took), reconnects once the server answers again, and its watch reports
// the change made meanwhile.
func TestAHungServerIsNoticed(t *testing.T) {
	s := startAt(t, "127.0.0.1:0")
	px := dsstest.NewProxy(t, s.Addr())
	cfg := testConfig(px.Addr())
	cfg.PingTimeout = time.Second
	c := dialConfig(t, cfg)
	w, err := c.Watch(ctxT(t), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctxT(t))
	mustSet(t, c, "k", "before")
	expectEvent(t, nextEvent(t, w), "k", OpSet, "before", false)

	px.Hang(true)
	hung := time.Now()
	other := dial(t, s.Addr())
	v := mustSet(t, other, "k", "while hung").Version
	// A bound on liveness, not on speed: twice the PingTimeout and a tick,
	// with room for a loaded machine; the keep alive alone took 30-60 s.
	dsstest.EventuallyWithin(t, 15*time.Second, "the client to notice the hung server", func() bool { return c.Server() == "" })
	t.Logf("a hung server was noticed after %v (PingTimeout 1s)", time.Since(hung).Round(10*time.Millisecond))

	px.Hang(false)
	e := nextEvent(t, w)
	if !e.Resync || e.Op != OpSet || string(e.Value) != "while hung" || e.Version != v {
		t.Fatalf("event %+v (value %q), want a resync with the value set while the server hung, at %v", e, e.Value, v)
	}
}

func TestPingTimeoutDefault(t *testing.T) {
	c, err := Config{Servers: []string{"h"}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.PingTimeout != 5*time.Second {
		t.Fatalf("PingTimeout %v, want 5s", c.PingTimeout)
	}
}
