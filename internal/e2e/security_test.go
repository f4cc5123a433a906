package e2e_test

import (
	"crypto/x509/pkix"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
)

const e2ePolicy = `
rules:
  - principals:
      usernames: [alice]
      attributes: [{organization: plant-1}]
    brokerResources:
      - method: Connect
    stateStoreResources:
      - method: ReadWrite
        keyType: Pattern
        keys: ["app/*"]
  - principals:
      usernames: [bob]
    brokerResources:
      - method: Connect
    stateStoreResources:
      - method: Read
        keyType: String
        keys: ["app/public"]
`

// passwd runs dss passwd FILE NAME with the password on standard input.
func passwd(t *testing.T, file, name, pw string) {
	t.Helper()
	cmd := exec.Command(dssBinary, "passwd", file, name)
	cmd.Stdin = strings.NewReader(pw + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dss passwd %s: %v\n%s", name, err, out)
	}
}

// The binary with TLS, a users file and a policy, and the binary's own
// client commands with and without grants.
func TestTheBinaryWithTLSUsersAndAPolicy(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	passwd(t, users, "alice", "alice-pw")
	passwd(t, users, "bob", "bob-pw")
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(e2ePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := dsstest.NewCA(t, "e2e")
	cert := ca.Server("server")
	tlsAddr := freeAddr(t)
	p := startDSS(t, freeAddr(t), "--in-memory", "--tls-listen", tlsAddr, "--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile,
		"--tls-client-ca", ca.CertFile, "--users", users, "--policy", policy)
	dsstest.Eventually(t, "the start-up line", func() bool { return strings.Contains(p.out.String(), "dss serving") })
	if line := p.out.String(); !strings.Contains(line, "mqtts="+tlsAddr) || !strings.Contains(line, `auth="users, client certificates, policy `) {
		t.Fatalf("the start-up line does not name the TLS listener and the authentication:\n%s", line)
	}

	client := func(user, pw string, args ...string) (string, int) {
		t.Helper()
		base := []string{args[0], "--server", tlsAddr, "--ca", ca.CertFile, "--timeout", "10s"}
		if user != "" {
			base = append(base, "--username", user)
		}
		if pw != "" {
			base = append(base, "--password", pw)
		}
		return runDSS(t, append(base, args[1:]...)...)
	}
	if out, code := client("alice", "alice-pw", "set", "app/public", "hello"); code != 0 {
		t.Fatalf("alice's set: exit %d: %s", code, out)
	}
	if out, code := client("bob", "bob-pw", "get", "app/public"); code != 0 || out != "hello" {
		t.Fatalf("bob's get of a granted key: exit %d: %q", code, out)
	}
	if out, code := client("bob", "bob-pw", "set", "app/public", "forged"); code != 2 || !strings.Contains(out, "not authorized") {
		t.Fatalf("bob's set of a key granted for reading: exit %d: %s", code, out)
	}
	if out, code := client("bob", "bob-pw", "del", "app/public"); code != 2 || !strings.Contains(out, "not authorized") {
		t.Fatalf("bob's del: exit %d: %s", code, out)
	}
	if out, code := client("bob", "guess", "get", "app/public"); code != 2 || !strings.Contains(out, "0x86") {
		t.Fatalf("a wrong password: exit %d: %s", code, out)
	}
	if out, code := client("", "", "get", "app/public"); code != 2 || !strings.Contains(out, "0x87") {
		t.Fatalf("no credentials: exit %d: %s", code, out)
	}
	line1 := ca.Client("line-1", pkix.Name{CommonName: "line-1", Organization: []string{"plant-1"}})
	if out, code := runDSS(t, "get", "--server", tlsAddr, "--ca", ca.CertFile, "--cert", line1.CertFile, "--key", line1.KeyFile, "app/public"); code != 0 || out != "hello" {
		t.Fatalf("a client certificate of plant-1: exit %d: %q", code, out)
	}
	if out, code := client("alice", "alice-pw", "get", "app/public"); code != 0 || out != "hello" {
		t.Fatalf("the value after the refused writes: exit %d: %q", code, out)
	}

	// SIGHUP reads the changed policy: bob may now write.
	if err := os.WriteFile(policy, []byte(strings.Replace(e2ePolicy, "method: Read\n", "method: ReadWrite\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	dsstest.Eventually(t, "the policy is reloaded", func() bool { return strings.Contains(p.out.String(), "policy reloaded") })
	if out, code := client("bob", "bob-pw", "set", "app/public", "bob's"); code != 0 {
		t.Fatalf("bob's set after the reload: exit %d: %s", code, out)
	}
	if code := p.terminate(); code != 0 {
		t.Fatalf("exit status %d after SIGTERM", code)
	}
}

// With no authentication configured the binary refuses to listen beyond
// loopback, and listens there after saying so.
func TestTheBinaryServesLoopbackOnlyWithoutAuthentication(t *testing.T) {
	out, code := runDSS(t, "serve", "--in-memory", "--listen", "0.0.0.0:0")
	if code == 0 || !strings.Contains(out, "--allow-anonymous") {
		t.Fatalf("a listener beyond loopback without authentication: exit %d: %s", code, out)
	}
	p := startDSS(t, freeAddr(t), "--in-memory")
	dsstest.Eventually(t, "the start-up line", func() bool { return strings.Contains(p.out.String(), "serving this machine only") })
}
