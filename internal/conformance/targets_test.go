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
	start func(t *testing.T, cfg server.Config) (addr string)
}

var targets = []target{
	{"serve", start},
	{"attach", func(t *testing.T, cfg server.Config) string {
		m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{})
		dsstest.StartAttached(t, m, cfg)
		return m.Addr
	}},
}

// forEachTarget runs test against every target, each in a subtest of
// its name.
func forEachTarget(t *testing.T, test func(t *testing.T, addr string)) {
	forEachTargetWith(t, server.Config{}, test)
}

// forEachTargetWith is forEachTarget with the store's settings cfg.
func forEachTargetWith(t *testing.T, cfg server.Config, test func(t *testing.T, addr string)) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			if tg.name == "attach" && dsstest.OverWebSocket() {
				// Attached, dss has no listener of its own: the clients
				// reach Mosquitto, over TCP.
				t.Skip("the run over dss's WebSocket listener: attached, clients talk to the broker")
			}
			test(t, tg.start(t, cfg))
		})
	}
}
