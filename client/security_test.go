package client

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dssio/dss/internal/auth"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// secureServer starts a server with TLS, a users file (alice), client
// certificates and a policy that gives alice and plant-1's certificates
// the keys under app/.
func secureServer(t *testing.T) (*server.Server, *dsstest.CA) {
	t.Helper()
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := auth.SetPassword(users, "alice", []byte("alice-pw")); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(`
rules:
  - principals: {usernames: [alice], attributes: [{organization: plant-1}]}
    brokerResources: [{method: Connect}]
    stateStoreResources:
      - {method: ReadWrite, keyType: Pattern, keys: ["app/*"]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := dsstest.NewCA(t, "dss")
	cert := ca.Server("server")
	s := dsstest.StartServer(t, server.Config{
		Users: users, Policy: policy, TLSClientCA: ca.CertFile,
		TLSCert: cert.CertFile, TLSKey: cert.KeyFile, TLSListen: "127.0.0.1:0", LoginDelay: time.Millisecond,
	})
	return s, ca
}

func TestClientOverTLSWithAPasswordOrACertificate(t *testing.T) {
	s, ca := secureServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()

	tlsCfg, err := LoadTLS(ca.CertFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(ctx, Config{Servers: []string{"mqtts://" + s.TLSAddr()}, TLS: tlsCfg, Username: "alice", Password: []byte("alice-pw")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Set(ctx, "app/x", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, "other", []byte("1")); !errors.Is(err, ErrNotAuthorized) {
		t.Fatalf("SET outside the grant: %v, want ErrNotAuthorized", err)
	}

	line1 := ca.Client("line-1", pkix.Name{CommonName: "line-1", Organization: []string{"plant-1"}})
	certCfg, err := LoadTLS(ca.CertFile, line1.CertFile, line1.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Dial(ctx, Config{Servers: []string{s.TLSAddr()}, TLS: certCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	e, found, err := d.Get(ctx, "app/x")
	if err != nil || !found || string(e.Value) != "1" {
		t.Fatalf("GET with a client certificate: %q %v %v", e.Value, found, err)
	}
}

func TestAWrongPasswordIsAConnectRefusedError(t *testing.T) {
	s, ca := secureServer(t)
	tlsCfg, _ := LoadTLS(ca.CertFile, "", "")
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	_, err := Dial(ctx, Config{Servers: []string{s.TLSAddr()}, TLS: tlsCfg, Username: "alice", Password: []byte("guess"), DialRounds: 1})
	var refused *ConnectRefusedError
	if !errors.As(err, &refused) || refused.ReasonCode != 0x86 {
		t.Fatalf("Dial with a wrong password: %v, want a ConnectRefusedError 0x86", err)
	}
}

// paho writes a packet in several writes; over TLS, requests sent from
// many goroutines at once must not land inside one another.
func TestConcurrentRequestsOverTLS(t *testing.T) {
	s, ca := secureServer(t)
	tlsCfg, _ := LoadTLS(ca.CertFile, "", "")
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	c, err := Dial(ctx, Config{Servers: []string{s.TLSAddr()}, TLS: tlsCfg, Username: "alice", Password: []byte("alice-pw")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 50 {
				if _, err := c.Set(ctx, fmt.Sprintf("app/%d-%d", g, i), []byte("v")); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
