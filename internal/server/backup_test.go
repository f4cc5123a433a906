package server_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/journal"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/store"
)

// TestBackupEndpoint fetches a backup over HTTP: with the admin token it
// holds every key; without it, the request is refused.
func TestBackupEndpoint(t *testing.T) {
	const token = "a-token-of-24-characters"
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0", AdminToken: token})
	c := dsstest.Dial(t, s.Addr(), "c")
	for _, k := range []string{"a", "b", "c"} {
		expect(t, "SET", c.Set([]string{k, "v-" + k}, ts(dsstest.Now())), "+OK\r\n", "any")
	}
	get := func(auth string) *http.Response {
		req, _ := http.NewRequest("GET", "http://"+s.HTTPAddr()+server.SnapshotPath, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if resp := get(""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a backup without the token: %s", resp.Status)
	}
	resp := get("Bearer " + token)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a backup with the token: %s", resp.Status)
	}
	body, _ := io.ReadAll(resp.Body)
	m := store.New()
	if _, err := journal.ReadBackup(bytes.NewReader(body), m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if v, _, ok := m.Get([]byte(k), 0); !ok || string(v) != "v-"+k {
			t.Fatalf("key %s in the backup: %q %v", k, v, ok)
		}
	}
}
