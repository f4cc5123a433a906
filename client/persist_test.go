package client

import (
	"context"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// Persist sends aio-persistence: true: a server run with --persistence
// flagged keeps such a key across a restart, and only such a key.
func TestSetPersist(t *testing.T) {
	cfg := server.Config{DataDir: t.TempDir(), Persistence: server.PersistFlagged}
	s := dsstest.StartServer(t, cfg)
	c := dial(t, s.Addr())
	if _, err := c.Set(ctxT(t), "kept", []byte("a"), Persist); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctxT(t), "lost", []byte("b")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s = dsstest.StartServer(t, cfg)
	c = dial(t, s.Addr())
	if e, found, err := c.Get(ctxT(t), "kept"); err != nil || !found || string(e.Value) != "a" {
		t.Fatalf("kept after a restart: %q %v %v", e.Value, found, err)
	}
	if _, found, err := c.Get(ctxT(t), "lost"); err != nil || found {
		t.Fatalf("lost after a restart: found %v, %v", found, err)
	}
}
