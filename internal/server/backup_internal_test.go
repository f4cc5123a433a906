package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestBackupIsForThisMachineWithoutAToken: without an admin token, a
// backup request from another machine is refused; with one, the request
// must carry it from anywhere.
func TestBackupIsForThisMachineWithoutAToken(t *testing.T) {
	served := false
	h := func(http.ResponseWriter, *http.Request) { served = true }
	for _, c := range []struct {
		token, remote, auth string
		want                int
	}{
		{"", "192.0.2.1:1234", "", http.StatusForbidden},
		{"", "127.0.0.1:1234", "", http.StatusOK},
		{"", "[::1]:1234", "", http.StatusOK},
		{"0123456789abcdef", "127.0.0.1:1234", "", http.StatusUnauthorized},
		{"0123456789abcdef", "192.0.2.1:1234", "Bearer 0123456789abcdeX", http.StatusUnauthorized},
		{"0123456789abcdef", "192.0.2.1:1234", "Basic 0123456789abcdef", http.StatusUnauthorized},
		{"0123456789abcdef", "192.0.2.1:1234", "Bearer 0123456789abcdef", http.StatusOK},
	} {
		served = false
		s := &Server{cfg: Config{AdminToken: c.token}}
		r := httptest.NewRequest("GET", SnapshotPath, nil)
		r.RemoteAddr = c.remote
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		w := httptest.NewRecorder()
		s.adminOnly(h)(w, r)
		if w.Code != c.want || served != (c.want == http.StatusOK) {
			t.Errorf("token %q, from %s, %q: status %d (served %v), want %d", c.token, c.remote, c.auth, w.Code, served, c.want)
		}
	}
}

func TestAShortAdminTokenIsRefused(t *testing.T) {
	c := Config{AdminToken: "short"}
	if err := c.Validate(); err != ErrAdminToken {
		t.Fatalf("Validate with a 5-character admin token: %v", err)
	}
}
