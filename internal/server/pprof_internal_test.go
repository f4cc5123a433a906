package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The profiler on an HTTP listener beyond loopback is said out loud at
// start: what it answers, and who.
func TestThePprofBeyondLoopbackIsWarnedOf(t *testing.T) {
	for _, c := range []struct {
		addr, token, want string
	}{
		{"127.0.0.1:9090", "", ""},
		{"0.0.0.0:9090", "", "answers clients on this machine only"},
		{"192.0.2.7:9090", "0123456789abcdef", "reachable beyond this machine with the admin token"},
	} {
		logs := &bytes.Buffer{}
		cfg := Config{AdminToken: c.token}
		cfg.checkPprof(c.addr, slog.New(slog.NewTextHandler(logs, nil)))
		got := logs.String()
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: %s", c.addr, got)
		case c.want != "" && (!strings.Contains(got, "level=WARN") || !strings.Contains(got, c.want)):
			t.Errorf("%s with token %q: %q, want a warning that it %s", c.addr, c.token, got, c.want)
		}
	}
}
