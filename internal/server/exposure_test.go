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

func TestSecuritySettingsThatCannotWork(t *testing.T) {
	for _, c := range []struct {
		cfg  server.Config
		want string
	}{
		{server.Config{Policy: "p.yaml"}, "a policy (--policy) names principals"},
		{server.Config{TLSCert: "c.pem"}, "TLS needs both a certificate (--tls-cert) and its key (--tls-key)"},
		{server.Config{TLSListen: "127.0.0.1:0"}, "need the server's certificate and key"},
		{server.Config{Users: "u", TLSClientCA: "ca.pem"}, "need the server's certificate and key"},
		{server.Config{Users: "/nonexistent/users"}, "users file"},
	} {
		c.cfg.Listen, c.cfg.Logger = "127.0.0.1:0", dsstest.Logger()
		_, err := server.New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want one containing %q", c.cfg, err, c.want)
		}
	}
}

func TestDefaultListenersOnceAuthenticationIsConfigured(t *testing.T) {
	for _, c := range []struct {
		cfg        server.Config
		plain, tls string
	}{
		{server.Config{}, "127.0.0.1:1883", "127.0.0.1:8883"},
		{server.Config{Users: "u"}, ":1883", ":8883"},
		{server.Config{Users: "u", TLSCert: "c", TLSKey: "k"}, "127.0.0.1:1883", ":8883"},
		{server.Config{TLSClientCA: "ca", TLSCert: "c", TLSKey: "k"}, "127.0.0.1:1883", ":8883"},
	} {
		if p, tl := c.cfg.DefaultListen(), c.cfg.DefaultTLSListen(); p != c.plain || tl != c.tls {
			t.Errorf("%+v: listeners %s and %s, want %s and %s", c.cfg, p, tl, c.plain, c.tls)
		}
	}
}
