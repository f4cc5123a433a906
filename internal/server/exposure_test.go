package server_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func TestDefaultListenerIsLoopbackOnly(t *testing.T) {
	var cfg server.Config
	if got := cfg.DefaultListen(); got != "127.0.0.1:1883" {
		t.Fatalf("default listener %q, want 127.0.0.1:1883", got)
	}
}

func TestAListenerBeyondLoopbackNeedsAuthentication(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0"} {
		_, err := server.New(server.Config{Listen: addr, Logger: dsstest.Logger()})
		if !errors.Is(err, server.ErrExposed) {
			t.Fatalf("listen %s without authentication: err %v, want ErrExposed", addr, err)
		}
	}
}

func TestAllowAnonymousOpensAListenerBeyondLoopback(t *testing.T) {
	log := &dsstest.Buffer{}
	s := dsstest.StartServer(t, server.Config{Listen: ":0", AllowAnonymous: true, Logger: slog.New(slog.NewTextHandler(log, nil))})
	c := dsstest.Dial(t, s.Addr(), "anonymous")
	if got := c.Request(dsstest.Cmd("GET", "k")); string(got.Payload) != "$-1\r\n" {
		t.Fatalf("GET: %q", got.Payload)
	}
	dsstest.Eventually(t, "the warning about anonymous clients", func() bool {
		return strings.Contains(log.String(), "anonymous clients allowed beyond loopback")
	})
}
