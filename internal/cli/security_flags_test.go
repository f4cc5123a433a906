package cli

import (
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/auth"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func TestClientCommandsLogInOverTLS(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := auth.SetPassword(users, "alice", []byte("alice-pw")); err != nil {
		t.Fatal(err)
	}
	ca := dsstest.NewCA(t, "dss")
	cert := ca.Server("server")
	s := dsstest.StartServer(t, server.Config{
		Users: users, TLSClientCA: ca.CertFile, TLSCert: cert.CertFile, TLSKey: cert.KeyFile,
		TLSListen: "127.0.0.1:0", LoginDelay: time.Millisecond,
	})
	addr := s.TLSAddr()

	runCLI(t, "", "set", "--server", addr, "--ca", ca.CertFile, "--username", "alice", "--password", "alice-pw", "k", "v").expectCode(t, ExitOK)
	t.Setenv("DSS_PASSWORD", "alice-pw")
	if r := runCLI(t, "", "get", "--server", "mqtts://"+addr, "--ca", ca.CertFile, "--username", "alice", "k").expectCode(t, ExitOK); r.out != "v" {
		t.Fatalf("get with DSS_PASSWORD: %q", r.out)
	}
	os.Unsetenv("DSS_PASSWORD") // a password sent must be right, even beside a certificate
	line1 := ca.Client("line-1", pkix.Name{CommonName: "line-1"})
	if r := runCLI(t, "", "get", "--server", addr, "--ca", ca.CertFile, "--cert", line1.CertFile, "--key", line1.KeyFile, "k").expectCode(t, ExitOK); r.out != "v" {
		t.Fatalf("get with a client certificate: %q", r.out)
	}

	r := runCLI(t, "", "get", "--server", addr, "--ca", ca.CertFile, "--username", "alice", "--password", "guess", "k").expectCode(t, ExitError)
	if !strings.Contains(r.err, "0x86") {
		t.Fatalf("a wrong password: stderr %q, want the reason code 0x86", r.err)
	}
	r = runCLI(t, "", "get", "--server", addr, "--tls", "k").expectCode(t, ExitError)
	if !strings.Contains(r.err, "certificate") {
		t.Fatalf("an unknown server CA: stderr %q, want the certificate error", r.err)
	}
}

func TestBenchLogsInOverTLSUnderAPolicy(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := auth.SetPassword(users, "bench", []byte("bench-pw")); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(`
rules:
  - principals: {usernames: [bench]}
    brokerResources: [{method: Connect}]
    stateStoreResources: [{method: ReadWrite, keyType: Pattern, keys: ["bench:*"]}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := dsstest.NewCA(t, "dss")
	cert := ca.Server("server")
	s := dsstest.StartServer(t, server.Config{
		Users: users, Policy: policy, TLSCert: cert.CertFile, TLSKey: cert.KeyFile, TLSListen: "127.0.0.1:0",
	})
	t.Setenv("DSS_PASSWORD", "bench-pw")
	code, out, errOut := runBenchCLI(t, "--server", s.TLSAddr(), "--ca", ca.CertFile, "--username", "bench",
		"--op", "mix:0.5", "--clients", "2", "--keys", "20", "--requests", "200", "--warmup", "0", "--timeout", "1m")
	if code != ExitOK || !strings.Contains(out, "requests") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Keys the policy does not grant are refused, and counted as errors.
	code, out, _ = runBenchCLI(t, "--server", s.TLSAddr(), "--ca", ca.CertFile, "--username", "bench",
		"--key-prefix", "other:", "--op", "set", "--clients", "1", "--requests", "10", "--warmup", "0", "--timeout", "1m")
	if code != ExitFalse || !strings.Contains(out, "not authorized") {
		t.Fatalf("keys outside the grant: exit %d, report %q", code, out)
	}
}
