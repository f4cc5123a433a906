package main

import (
	"context"
	"testing"
	"time"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// TestRun plays the example against a server: run fails unless the stale
// holder's write is refused and the new holder's value stays.
func TestRun(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	cfg := client.Config{Servers: []string{s.Addr()}}
	if err := run(ctx, cfg, "leader", "state", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if e, _, err := c.Get(ctx, "state"); err != nil || string(e.Value) != "written by B" {
		t.Fatalf("state %q, %v", e.Value, err)
	}
}
