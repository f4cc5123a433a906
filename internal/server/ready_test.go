package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readyz returns the status and body of GET /readyz.
func readyz(t *testing.T, s *Server) (int, string) {
	t.Helper()
	res, err := http.Get("http://" + s.HTTPAddr() + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

type checkFunc func() error

func (f checkFunc) Ready() error { return f() }

func TestReadyz(t *testing.T) {
	s, err := New(Config{
		Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", NodeID: "ready",
		DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Recovered but not yet accepting clients.
	if err := s.Ready(); !errors.Is(err, ErrStarting) {
		t.Fatalf("before Start: Ready() = %v, want %v", err, ErrStarting)
	}
	var leader error = errors.New("no cluster leader")
	s.readiness = append(s.readiness, checkFunc(func() error { return leader }))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())

	// An added condition that does not hold (a cluster without a leader).
	if code, body := readyz(t, s); code != http.StatusServiceUnavailable || body != "not ready: no cluster leader\n" {
		t.Fatalf("without a leader: %d %q", code, body)
	}
	leader = nil
	if code, body := readyz(t, s); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("serving: %d %q", code, body)
	}
	// /healthz stays beside it.
	res, err := http.Get("http://" + s.HTTPAddr() + "/healthz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %v %v", res, err)
	}
	res.Body.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("after Shutdown: Ready() = %v, want %v", err, ErrShuttingDown)
	}
}

func TestStartupLine(t *testing.T) {
	var logs strings.Builder
	dir := t.TempDir()
	t.Chdir(dir)
	start := func() {
		t.Helper()
		s, err := New(Config{
			Listen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", NodeID: "startup",
			DataDir: "rel-data", Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	start()
	line := lineWith(t, logs.String(), "dss serving")
	abs := filepath.Join(dir, "rel-data")
	for _, want := range []string{"data=" + abs, "new_data_dir=true", "mqtt=127.0.0.1:", "http=127.0.0.1:", "auth=none", "version=", "commit=", "go=go", "memory=", "memory_from="} {
		if !strings.Contains(line, want) {
			t.Errorf("start-up line %q lacks %q", line, want)
		}
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("data directory: %v", err)
	}
	// The second start finds the state of the first.
	logs.Reset()
	start()
	if line := lineWith(t, logs.String(), "dss serving"); strings.Contains(line, "new_data_dir") {
		t.Errorf("second start calls the data directory new: %q", line)
	}
}

func lineWith(t *testing.T, logs, what string) string {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, what) {
			return l
		}
	}
	t.Fatalf("no log line with %q in:\n%s", what, logs)
	return ""
}
