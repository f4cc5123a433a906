package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/journal"
	"github.com/dssio/dss/internal/server"
)

// TestAJournalFileRemovedWhileServingStopsTheWrites: the journal's
// segment is deleted (or moved away) while the server runs. No write is
// acknowledged from then on, /healthz answers 503, and the log says why:
// 60 writes were acknowledged, /healthz said 200, nothing was logged,
// and all 60 were gone after a restart.
func TestAJournalFileRemovedWhileServingStopsTheWrites(t *testing.T) {
	for _, c := range []struct {
		name string
		// at once: the next write notices, without waiting for the
		// server's look at its files.
		atOnce bool
		remove func(t *testing.T, path string)
	}{
		{"deleted", true, func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{"moved away", false, func(t *testing.T, path string) {
			if err := os.Rename(path, path+".moved"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			logs := &dsstest.Buffer{}
			s, err := server.New(server.Config{DataDir: dir, Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", NodeID: "test",
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				// The server stops with the journal's error.
				ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
				defer cancel()
				if err := s.Shutdown(ctx); !errors.Is(err, journal.ErrFileGone) {
					t.Errorf("Shutdown: %v, want %v", err, journal.ErrFileGone)
				}
			})
			cl := dsstest.Dial(t, s.Addr(), "writer")
			expect(t, "SET before", cl.Set([]string{"before", "v"}), "+OK\r\n", "any")
			segments, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
			if len(segments) != 1 {
				t.Fatalf("segments %v", segments)
			}
			c.remove(t, segments[0])
			if c.atOnce {
				if p := cl.Set([]string{"at-once", "v"}); string(p.Payload) == "+OK\r\n" {
					t.Fatalf("the first write after the journal's file was %s was acknowledged", c.name)
				}
			}

			// Every write from now on is refused, the first one
			// included, or at the latest the one after the server's
			// next look at its files.
			dsstest.Eventually(t, "/healthz fails", func() bool {
				code, body := dsstest.HTTPGet(t, s.HTTPAddr(), "/healthz")
				return code == http.StatusServiceUnavailable && strings.Contains(body, segments[0])
			})
			for i := range 5 {
				if p := cl.Set([]string{"after", "v"}); string(p.Payload) == "+OK\r\n" {
					t.Fatalf("write %d after the journal's file was %s was acknowledged", i, c.name)
				}
			}
			if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), segments[0]) {
				t.Fatalf("the log does not say what happened:\n%s", logs)
			}
		})
	}
}
