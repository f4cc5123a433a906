package server_test

import (
	"net/http"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// With an admin token, the profiler needs it as a backup does: its
// profiles show the server's memory. It was served to anyone who could
// reach the HTTP endpoint.
func TestThePprofNeedsTheAdminToken(t *testing.T) {
	const token = "0123456789abcdef"
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0", Pprof: true, AdminToken: token})
	get := func(auth string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr()+"/debug/pprof/cmdline", nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != http.StatusUnauthorized {
		t.Fatalf("the profiler without the token: %d, want 401", code)
	}
	if code := get("wrong-token-wrong"); code != http.StatusUnauthorized {
		t.Fatalf("the profiler with a wrong token: %d, want 401", code)
	}
	if code := get(token); code != http.StatusOK {
		t.Fatalf("the profiler with the token: %d, want 200", code)
	}
}
