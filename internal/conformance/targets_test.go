package conformance

import (
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// target is a server that the state store tests run against: dss's own
// broker (dss serve), or Mosquitto with dss attached to it (dss attach).
// The MQTT tests of this package are about dss's broker and run against
// serve alone; the state store protocol is the same through either.
type target struct {
	name  string
	start func(t *testing.T) (addr string)
}

var targets = []target{
	{"serve", func(t *testing.T) string { return start(t, server.Config{}) }},
	{"attach", func(t *testing.T) string {
		m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{})
		dsstest.StartAttached(t, m, server.Config{})
		return m.Addr
	}},
}

// forEachTarget runs test against every target, each in a subtest of
// its name.
func forEachTarget(t *testing.T, test func(t *testing.T, addr string)) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) { test(t, tg.start(t)) })
	}
}
