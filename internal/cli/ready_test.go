package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

	// A 503 is "not ready", with the server's reason.
	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not ready: shutting down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(notReady.Close)
	addr := strings.TrimPrefix(notReady.URL, "http://")
	r = runCLI(t, "", "ready", "--http", addr).expectCode(t, ExitFalse)
	if r.err != "dss: not ready: shutting down\n" {
		t.Fatalf("not ready: stderr %q", r.err)
	}

	// A server that answers once and then no more: the answer it gave
	// stands when the wait ends during a probe.
	var asked atomic.Int32
	stalls := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) == 1 {
			http.Error(w, "not ready: recovering", http.StatusServiceUnavailable)
			return
		}
		<-r.Context().Done()
	}))
	t.Cleanup(stalls.Close)

	// --wait asks until --timeout passes and reports the last answer. The
	// timeout leaves a loaded machine time for a probe.
	for _, c := range []struct {
		name, addr string
		code       int
		stderr     string
	}{
		{"no server", dead, ExitError, "connection refused"},
		{"not ready", addr, ExitFalse, "dss: not ready: shutting down\n"},
		{"answers once", strings.TrimPrefix(stalls.URL, "http://"), ExitFalse, "dss: not ready: recovering\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, "", "ready", "--http", c.addr, "--wait", "--timeout", "2s").expectCode(t, c.code)
			if !strings.Contains(r.err, c.stderr) {
				t.Fatalf("stderr %q, want %q", r.err, c.stderr)
			}
		})
	}
}
