package server_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// FuzzRequest sends arbitrary payloads and envelope values through the
// real server. Every request must get one well-formed response, and the
// server must keep serving another client.
func FuzzRequest(f *testing.F) {
	now := dsstest.Now()
	f.Add(dsstest.Cmd("SET", "k", "v", "NX", "PX", "100"), now, "", "1.0")
	f.Add(dsstest.Cmd("set", "k", "v", "nex"), now, now, "")
	f.Add(dsstest.Cmd("GET", "k"), "", "", "")
	f.Add(dsstest.Cmd("VDEL", "k", "v"), "", "1:2:3", "1.0")
	f.Add(dsstest.Cmd("DEL", "k"), "", now, "")
	f.Add(dsstest.Cmd("KEYNOTIFY", "k", "STOP"), "", "", "2.0")
	f.Add([]byte("*1\r\n$-1\r\n"), "x", "y", "z")
	f.Add([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$99999\r\n"), now, "", "")

	s := dsstest.StartServer(f, server.Config{})
	witness := dsstest.Dial(f, s.Addr(), "witness")
	f.Fuzz(func(t *testing.T, payload []byte, tsVal, ftVal, version string) {
		for _, s := range []string{tsVal, ftVal, version} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Skip("MQTT strings are UTF-8 without NUL; the broker disconnects a client that sends others")
			}
		}
		c := dsstest.Dial(t, s.Addr(), "fuzz")
		var user []paho.UserProperty
		if tsVal != "" {
			user = append(user, ts(tsVal))
		}
		if ftVal != "" {
			user = append(user, ft(ftVal))
		}
		if version != "" {
			user = append(user, paho.UserProperty{Key: wire.PropProtocolVersion, Value: version})
		}
		p := c.Request(payload, user...)
		status, _ := dsstest.UserProperty(p, wire.PropStatus)
		switch status {
		case wire.StatusOK:
			if _, err := resp.ParseReply(p.Payload); err != nil {
				t.Fatalf("response %q is not a RESP3 reply", p.Payload)
			}
		case wire.StatusVersionNotSupported:
		default:
			t.Fatalf("__stat %q", status)
		}
		_ = witness // checked after the fuzz loop: it must still be served
	})
	if p := witness.Request(dsstest.Cmd("GET", "witness")); string(p.Payload) != "$-1\r\n" {
		f.Fatalf("witness GET: %q", p.Payload)
	}
}
