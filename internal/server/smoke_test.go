package server_test

import (
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func TestSmoke(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dsstest.Dial(t, s.Addr(), "smoke")
	r := c.Set([]string{"k", "v"})
	t.Logf("SET -> %q %+v", r.Payload, r.Properties.User)
	r = c.Request(dsstest.Cmd("GET", "k"))
	t.Logf("GET -> %q %+v ct=%q", r.Payload, r.Properties.User, r.Properties.ContentType)
	r = c.Request(dsstest.Cmd("GET", "nope"))
	t.Logf("GET miss -> %q %+v", r.Payload, r.Properties.User)
}
