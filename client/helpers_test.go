package client

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// testConfig returns a client configuration for servers under test, with
// short backoffs so that reconnects happen quickly.
func testConfig(addrs ...string) Config {
	return Config{
		Servers:        addrs,
		ConnectTimeout: 2 * time.Second,
		MinBackoff:     10 * time.Millisecond,
		MaxBackoff:     100 * time.Millisecond,
		ResyncTimeout:  dsstest.Timeout,
	}
}

// dial connects a client to addrs and closes it when the test ends.
func dial(t *testing.T, addrs ...string) *Client {
	t.Helper()
	return dialConfig(t, testConfig(addrs...))
}

func dialConfig(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := Dial(ctxT(t), cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ctxT returns a context that ends after dsstest.Timeout or with the test.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// freeAddr returns a loopback address that nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// stoppable is a server that a test shuts down itself.
type stoppable struct {
	t *testing.T
	*server.Server
	stopped bool
}

// startAt starts a server on addr; it is shut down at the end of the test
// unless the test did it.
func startAt(t *testing.T, addr string) *stoppable {
	t.Helper()
	s, err := server.New(server.Config{Listen: addr, NodeID: "test", Logger: dsstest.Logger()})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("server.Start: %v", err)
	}
	st := &stoppable{t: t, Server: s}
	t.Cleanup(func() {
		if !st.stopped {
			st.stop()
		}
	})
	return st
}

func (s *stoppable) stop() {
	s.t.Helper()
	s.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		s.t.Errorf("server.Shutdown: %v", err)
	}
}

// nextEvent returns the next event of w, failing the test if none comes.
func nextEvent(t *testing.T, w *Watch) Event {
	t.Helper()
	select {
	case e, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended: %v", w.Err())
		}
		return e
	case <-time.After(dsstest.Timeout):
		t.Fatalf("no event within %v", dsstest.Timeout)
	}
	return Event{}
}

// expectEvent fails the test unless e is the given change.
func expectEvent(t *testing.T, e Event, key string, op Op, value string, resync bool) {
	t.Helper()
	if e.Key != key || e.Op != op || string(e.Value) != value || e.Resync != resync {
		t.Fatalf("event %+v (value %q), want key %q op %v value %q resync %v", e, e.Value, key, op, value, resync)
	}
}

func mustSet(t *testing.T, c *Client, key, value string, opts ...SetOption) SetResult {
	t.Helper()
	r, err := c.Set(ctxT(t), key, []byte(value), opts...)
	if err != nil {
		t.Fatalf("Set(%q): %v", key, err)
	}
	return r
}

// withVersion returns e with a version of wall clock n.
func (e Event) withVersion(n int64) Event {
	e.Version = hlc.Timestamp{Wall: n, Node: "n"}
	return e
}

// contextWithTimeout returns a context that ends after ms milliseconds.
func contextWithTimeout(t *testing.T, ms int) (context.Context, context.CancelFunc) {
	t.Helper()
	return context.WithTimeout(context.Background(), time.Duration(ms)*time.Millisecond)
}
