// Package dsstest starts real dss servers and connects real MQTT 5 clients
// to them, for tests. Servers listen on random loopback ports and are shut
// down when the test ends.
package dsstest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/server"
)

// Timeout bounds every wait in this package.
const Timeout = 10 * time.Second

// StartServer starts a server from cfg on a random loopback port. Unset
// listener and node id fields get test values.
func StartServer(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.NodeID == "" {
		cfg.NodeID = "test"
	}
	if cfg.Logger == nil {
		cfg.Logger = Logger()
	}
	if OverWebSocket() && cfg.WSListen == "" {
		cfg.WSListen = "127.0.0.1:0"
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	if ws := s.WSAddr(); ws != "" && OverWebSocket() {
		wsAddrs.Store(s.Addr(), ws)
		t.Cleanup(func() { wsAddrs.Delete(s.Addr()) })
	}
	if err := s.Start(); err != nil {
		t.Fatalf("server.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("server.Shutdown: %v", err)
		}
	})
	return s
}

// Logger returns a logger for servers under test: silent unless the
// environment variable DSS_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("DSS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Cmd encodes a request as a RESP3 array of bulk strings.
func Cmd(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return resp.AppendArray(nil, b...)
}

// Now returns a client timestamp for the current time.
func Now() string {
	return hlc.Timestamp{Wall: time.Now().UnixMilli(), Node: "client"}.String()
}

// Eventually polls cond every few milliseconds until it holds, and fails
// the test if it does not within Timeout.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, Timeout, what, cond)
}

// EventuallyWithin is Eventually with a limit of its own, for what takes
// longer than Timeout (a build, a process's exit).
func EventuallyWithin(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Long reports whether the long variants of randomized and fault-injection
// tests should run: set DSS_LONG=1. CI runs the short variants.
func Long() bool { return os.Getenv("DSS_LONG") != "" }

// Rounds returns short in CI and long when Long is set.
func Rounds(short, long int) int {
	if Long() {
		return long
	}
	return short
}
