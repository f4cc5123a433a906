package client

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"
)

func TestParseAddr(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:1883":        "localhost:1883",
		"localhost":             "localhost:1883",
		"mqtt://10.0.0.1:1884":  "10.0.0.1:1884",
		"TCP://host/":           "host:1883",
		"::1":                   "[::1]:1883",
		"[::1]:1999":            "[::1]:1999",
		"mqtt://[fe80::1]:1883": "[fe80::1]:1883",
	} {
		got, err := parseAddr(in, false)
		if err != nil || got != want {
			t.Errorf("parseAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"localhost":         "localhost:8883",
		"mqtts://host":      "host:8883",
		"tls://host:9999":   "host:9999",
		"SSL://[::1]":       "[::1]:8883",
		"host.example:8883": "host.example:8883",
	} {
		got, err := parseAddr(in, true)
		if err != nil || got != want {
			t.Errorf("parseAddr(%q) with TLS = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ws://host", "mqtt://", "mqtts://"} {
		if got, err := parseAddr(bad, false); err == nil {
			t.Errorf("parseAddr(%q) = %q, want an error", bad, got)
		}
	}
	if got, err := parseAddr("mqtt://host", true); err == nil {
		t.Errorf("a plain mqtt:// server among TLS ones: %q, want an error", got)
	}
}

func TestATLSSchemeTurnsTLSOn(t *testing.T) {
	c, err := (Config{Servers: []string{"mqtts://a", "b:1"}}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.TLS == nil || c.TLS.MinVersion < tls.VersionTLS12 || c.Servers[0] != "a:8883" || c.Servers[1] != "b:1" {
		t.Fatalf("TLS %v, servers %v", c.TLS, c.Servers)
	}
	if _, err := LoadTLS("", "cert.pem", ""); err == nil {
		t.Fatal("a certificate without its key was accepted")
	}
}

func TestConfigDefaults(t *testing.T) {
	if _, err := (Config{}).withDefaults(); err == nil {
		t.Fatal("a config without servers is accepted")
	}
	c, err := (Config{Servers: []string{"h"}, ClientID: "a:b"}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Servers[0] != "h:1883" || c.KeepAlive != 30*time.Second || c.Clock == nil || c.Logger == nil {
		t.Fatalf("defaults %+v", c)
	}
	if node := c.Clock.Node(); strings.Contains(node, ":") {
		t.Fatalf("clock node id %q holds ':'", node)
	}
	c, _ = (Config{Servers: []string{"h"}}).withDefaults()
	d, _ := (Config{Servers: []string{"h"}}).withDefaults()
	if !strings.HasPrefix(c.ClientID, "dss-") || c.ClientID == d.ClientID {
		t.Fatalf("client ids %q and %q: want distinct dss- ids", c.ClientID, d.ClientID)
	}
	if _, err := (Config{Servers: []string{"h"}, KeepAlive: time.Millisecond}).withDefaults(); err == nil {
		t.Fatal("keep alive below a second accepted")
	}
}

func TestBackoff(t *testing.T) {
	c := &Client{cfg: Config{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}}
	for round, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second} {
		for range 20 {
			if d := c.backoff(round); d < want/2 || d > want {
				t.Fatalf("round %d: backoff %v outside [%v, %v]", round, d, want/2, want)
			}
		}
	}
}
