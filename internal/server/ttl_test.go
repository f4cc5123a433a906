package server_test

import (
	"strconv"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// A GET that asks with dss-ttl: true is told the time its key has left;
// one that does not ask gets the response it always got.
func TestGetReportsTheTTLWhenAsked(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dsstest.Dial(t, s.Addr(), "ttl")
	ask := paho.UserProperty{Key: wire.PropTTL, Value: "true"}
	expect(t, "SET PX", c.Set([]string{"expiring", "v", "PX", "60000"}), "+OK\r\n", "any")
	expect(t, "SET", c.Set([]string{"lasting", "v"}), "+OK\r\n", "any")

	p := c.Request(dsstest.Cmd("GET", "expiring"), ask)
	v, ok := dsstest.UserProperty(p, wire.PropTTL)
	ms, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil || ms <= 0 || ms > 60000 {
		t.Fatalf("GET of a key with PX 60000, asking: dss-ttl %q (present %v)", v, ok)
	}
	for _, tc := range []struct {
		key  string
		user []paho.UserProperty
	}{{"expiring", nil}, {"lasting", []paho.UserProperty{ask}}, {"missing", []paho.UserProperty{ask}}} {
		p := c.Request(dsstest.Cmd("GET", tc.key), tc.user...)
		if v, ok := dsstest.UserProperty(p, wire.PropTTL); ok {
			t.Errorf("GET %s (asking: %v): dss-ttl %q, want none", tc.key, tc.user != nil, v)
		}
		var keys []string
		for _, u := range p.Properties.User {
			keys = append(keys, u.Key)
		}
		if tc.key != "missing" && len(keys) != 3 {
			t.Errorf("GET %s: user properties %v, want __stat, __protVer, __ts", tc.key, keys)
		}
	}
}
