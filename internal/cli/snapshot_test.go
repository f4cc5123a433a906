package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func TestSnapshotSaveAndRestore(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	os.WriteFile(token, []byte("a-secret-of-enough-length\n"), 0o600)
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0", AdminToken: "a-secret-of-enough-length"})
	c := dsstest.Dial(t, s.Addr(), "c")
	c.Set([]string{"k", "v"})
	file := filepath.Join(t.TempDir(), "b")

	r := runCLI(t, "", "snapshot", "save", file, "--http", s.HTTPAddr()).expectCode(t, ExitError)
	if !strings.Contains(r.err, "401") {
		t.Fatalf("a save without the token: stderr %q", r.err)
	}
	if _, err := os.Stat(file); err == nil {
		t.Fatal("a failed save left its file")
	}
	r = runCLI(t, "", "snapshot", "save", file, "--http", "http://"+s.HTTPAddr(), "--token-file", token).expectCode(t, ExitOK)
	if !strings.Contains(r.out, "saved 1 records") {
		t.Fatalf("stdout %q", r.out)
	}
	dir := filepath.Join(t.TempDir(), "data")
	r = runCLI(t, "", "snapshot", "restore", file, "--data", dir).expectCode(t, ExitOK)
	if !strings.Contains(r.out, "restored 1 keys") {
		t.Fatalf("stdout %q", r.out)
	}
	r = runCLI(t, "", "snapshot", "restore", file, "--data", dir).expectCode(t, ExitError)
	if !strings.Contains(r.err, "not empty") || !strings.Contains(r.err, "--force") {
		t.Fatalf("a restore into a store: stderr %q", r.err)
	}
	r = runCLI(t, "", "snapshot", "restore", token, "--data", t.TempDir()).expectCode(t, ExitError)
	if !strings.Contains(r.err, "not a dss backup") {
		t.Fatalf("a restore of a file that is no backup: stderr %q", r.err)
	}
}

// TestSnapshotSaveServerIsNotTheMQTTAddress: DSS_SERVER, the MQTT address
// of the client commands, does not set the HTTP address of a save.
func TestSnapshotSaveServerIsNotTheMQTTAddress(t *testing.T) {
	closed := dsstest.ClosedAddr(t)
	t.Setenv("DSS_SERVER", closed)
	r := runCLI(t, "", "snapshot", "save", filepath.Join(t.TempDir(), "b")).expectCode(t, ExitError)
	if !strings.Contains(r.err, "--http: give the address of the server's HTTP endpoint") {
		t.Fatalf("stderr %q", r.err)
	}
	t.Setenv("DSS_HTTP_SERVER", closed)
	r = runCLI(t, "", "snapshot", "save", filepath.Join(t.TempDir(), "b"), "--timeout", "1s").expectCode(t, ExitError)
	if !strings.Contains(r.err, closed) {
		t.Fatalf("DSS_HTTP_SERVER was not used: stderr %q", r.err)
	}
}

// The HTTP endpoint flag is --http, HOST:PORT or http://HOST:PORT, for
// dss ready and dss snapshot save alike; save's old --server and
// DSS_HTTP_SERVER still work, with a deprecation notice.
func TestHTTPEndpointFlag(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{HTTPListen: "127.0.0.1:0"})
	for _, addr := range []string{s.HTTPAddr(), "http://" + s.HTTPAddr(), "http://" + s.HTTPAddr() + "/"} {
		runCLI(t, "", "ready", "--http", addr).expectCode(t, ExitOK)
		runCLI(t, "", "snapshot", "save", filepath.Join(t.TempDir(), "b"), "--http", addr).expectCode(t, ExitOK)
	}
	r := runCLI(t, "", "snapshot", "save", filepath.Join(t.TempDir(), "b"), "--server", s.HTTPAddr()).expectCode(t, ExitOK)
	if !strings.Contains(r.err, "--server (DSS_HTTP_SERVER) is deprecated: use --http") {
		t.Errorf("--server: no deprecation notice: %q", r.err)
	}
	t.Setenv("DSS_HTTP", s.HTTPAddr())
	runCLI(t, "", "ready").expectCode(t, ExitOK)
	runCLI(t, "", "snapshot", "save", filepath.Join(t.TempDir(), "b")).expectCode(t, ExitOK)
	if r := runCLI(t, "", "ready", "--http", "https://"+s.HTTPAddr()).expectCode(t, ExitError); !strings.Contains(r.err, "plain HTTP") {
		t.Errorf("https:// %q", r.err)
	}
}
