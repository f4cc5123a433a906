package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func TestReadyCmd(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0"})
	r := runCLI(t, "", "ready", "--http", s.HTTPAddr()).expectCode(t, ExitOK)
	if r.out != "" || r.err != "" {
		t.Fatalf("ready: stdout %q stderr %q", r.out, r.err)
	}
	runCLI(t, "", "ready", "--http", s.HTTPAddr(), "--wait").expectCode(t, ExitOK)

	dead := s.HTTPAddr()
	if err := s.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "", "ready", "--http", dead).expectCode(t, ExitError)
	if !strings.Contains(r.err, "connection refused") {
		t.Fatalf("no server: stderr %q", r.err)
	}
	r = runCLI(t, "", "ready", "--http", dead, "--wait", "--timeout", "300ms").expectCode(t, ExitError)
	if !strings.Contains(r.err, "connection refused") {
		t.Fatalf("no server, waiting: stderr %q", r.err)
	}

	// A 503 is "not ready", with the server's reason.
	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not ready: shutting down", http.StatusServiceUnavailable)
	}))
	defer notReady.Close()
	addr := strings.TrimPrefix(notReady.URL, "http://")
	r = runCLI(t, "", "ready", "--http", addr).expectCode(t, ExitFalse)
	if r.err != "dss: not ready: shutting down\n" {
		t.Fatalf("not ready: stderr %q", r.err)
	}
	runCLI(t, "", "ready", "--http", addr, "--wait", "--timeout", "300ms").expectCode(t, ExitFalse)
}
