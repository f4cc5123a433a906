package cli

import (
	"context"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// dss set --persist sends aio-persistence: true, so that a server run
// with --persistence flagged keeps the key across a restart, and only it.
func TestSetPersist(t *testing.T) {
	cfg := server.Config{DataDir: t.TempDir(), Persistence: server.PersistFlagged}
	s := dsstest.StartServer(t, cfg)
	runCLI(t, "", "set", "--server", s.Addr(), "--persist", "kept", "a").expectCode(t, ExitOK)
	runCLI(t, "", "set", "--server", s.Addr(), "lost", "b").expectCode(t, ExitOK)
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s = dsstest.StartServer(t, cfg)
	if r := runCLI(t, "", "get", "--server", s.Addr(), "kept").expectCode(t, ExitOK); r.out != "a" {
		t.Fatalf("get kept after a restart: %q", r.out)
	}
	runCLI(t, "", "get", "--server", s.Addr(), "lost").expectCode(t, ExitFalse)
}
