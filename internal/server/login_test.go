package server_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/auth"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// usersFile writes a users file with the given names and passwords.
func usersFile(t *testing.T, users ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users")
	for i := 0; i < len(users); i += 2 {
		if err := auth.SetPassword(path, users[i], []byte(users[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// refusedWith connects with login and checks that the CONNACK refuses
// with code.
func refusedWith(t *testing.T, addr, id string, login dsstest.Login, code byte) {
	t.Helper()
	_, ca, err := dsstest.Connect(t, addr, id, login)
	if err != nil {
		t.Fatalf("%s: %v, want CONNACK %#x", id, err, code)
	}
	if ca.ReasonCode != code {
		t.Fatalf("%s: CONNACK %#x, want %#x", id, ca.ReasonCode, code)
	}
}

func TestLoginWithAUsersFile(t *testing.T) {
	logs := &dsstest.Buffer{}
	s := dsstest.StartServer(t, server.Config{
		Users:      usersFile(t, "alice", "alice-pw"),
		LoginDelay: time.Millisecond,
		Logger:     slog.New(slog.NewTextHandler(logs, nil)),
		HTTPListen: "127.0.0.1:0",
	})
	refusedWith(t, s.Addr(), "none", dsstest.Login{}, 0x87)
	refusedWith(t, s.Addr(), "wrong", dsstest.Login{Username: "alice", Password: "guess-1"}, 0x86)
	refusedWith(t, s.Addr(), "unknown", dsstest.Login{Username: "mallory", Password: "alice-pw"}, 0x86)
	refusedWith(t, s.Addr(), "no-password", dsstest.Login{Username: "alice"}, 0x86)
	for series, want := range map[string]float64{
		`dss_logins_refused_total{reason="not authorized"}`:           1,
		`dss_logins_refused_total{reason="bad username or password"}`: 3,
	} {
		if got := metricValue(t, s, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}

	c := dsstest.DialWith(t, s.Addr(), "alice-1", dsstest.Login{Username: "alice", Password: "alice-pw"})
	c.Subscribe(c.ResponseTopic)
	expect(t, "SET", c.Set([]string{"k", "v"}), "+OK\r\n", "any")

	out := logs.String()
	if !strings.Contains(out, `msg="login refused"`) || !strings.Contains(out, "username=mallory") {
		t.Fatalf("failed logins not logged:\n%s", out)
	}
	if strings.Contains(out, "guess-1") || strings.Contains(out, "alice-pw") {
		t.Fatalf("a password is in the log:\n%s", out)
	}
}

func TestFailedLoginsAreSlowedPerAddress(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{
		Users:      usersFile(t, "alice", "alice-pw"),
		LoginDelay: 40 * time.Millisecond,
	})
	bad := dsstest.Login{Username: "alice", Password: "guess"}
	var took []time.Duration
	for range 3 {
		start := time.Now()
		refusedWith(t, s.Addr(), "guesser", bad, 0x86)
		took = append(took, time.Since(start))
	}
	// 40, 80, 160 ms: each failure in a row doubles the wait.
	if took[0] < 40*time.Millisecond || took[1] < 80*time.Millisecond || took[2] < 160*time.Millisecond {
		t.Fatalf("failed logins answered after %v, want at least 40ms, 80ms, 160ms", took)
	}
	// The right password still gets in (and clears the address: see
	// auth's TestThrottleDelaysFailuresAndTakesAnAddressOneAtATime).
	dsstest.DialWith(t, s.Addr(), "alice", dsstest.Login{Username: "alice", Password: "alice-pw"})
}

// tlsServer starts a server with a TLS listener signed by a new CA, and
// the options of cfg.
func tlsServer(t *testing.T, cfg server.Config) (*server.Server, *dsstest.CA) {
	t.Helper()
	ca := dsstest.NewCA(t, "dss-test")
	s, _ := tlsServerWith(t, ca, ca.Server("server"), cfg)
	return s, ca
}

func tlsServerWith(t *testing.T, ca *dsstest.CA, cert *dsstest.Cert, cfg server.Config) (*server.Server, *dsstest.Cert) {
	t.Helper()
	cfg.TLSCert, cfg.TLSKey, cfg.TLSListen = cert.CertFile, cert.KeyFile, "127.0.0.1:0"
	if cfg.TLSClientCA == "-" {
		cfg.TLSClientCA = ca.CertFile
	}
	if cfg.LoginDelay == 0 {
		cfg.LoginDelay = time.Millisecond
	}
	return dsstest.StartServer(t, cfg), cert
}

func TestTLSWithPasswordsAndClientCertificates(t *testing.T) {
	s, ca := tlsServer(t, server.Config{Users: usersFile(t, "alice", "alice-pw"), TLSClientCA: "-"})
	if s.TLSAddr() == "" {
		t.Fatal("no TLS listener")
	}
	line1 := ca.Client("line-1", pkix.Name{CommonName: "line-1", Organization: []string{"plant-1"}})

	// A client certificate alone, a password alone, both.
	byCert := dsstest.DialWith(t, s.TLSAddr(), "line-1", dsstest.Login{TLS: ca.ClientTLS(line1)})
	byCert.Subscribe(byCert.ResponseTopic)
	expect(t, "SET over TLS", byCert.Set([]string{"k", "v"}), "+OK\r\n", "any")
	dsstest.DialWith(t, s.TLSAddr(), "alice", dsstest.Login{TLS: ca.ClientTLS(), Username: "alice", Password: "alice-pw"})
	dsstest.DialWith(t, s.TLSAddr(), "both", dsstest.Login{TLS: ca.ClientTLS(line1), Username: "alice", Password: "alice-pw"})

	refusedWith(t, s.TLSAddr(), "nothing", dsstest.Login{TLS: ca.ClientTLS()}, 0x87)
	refusedWith(t, s.TLSAddr(), "cert-wrong-pw", dsstest.Login{TLS: ca.ClientTLS(line1), Username: "alice", Password: "x"}, 0x86)
	// The plain listener (loopback) takes passwords, but no certificates.
	dsstest.DialWith(t, s.Addr(), "plain", dsstest.Login{Username: "alice", Password: "alice-pw"})
	refusedWith(t, s.Addr(), "plain-nothing", dsstest.Login{}, 0x87)

	// A certificate from another CA does not pass the handshake, even
	// sent when the server does not ask for that CA.
	other := dsstest.NewCA(t, "other")
	stranger := other.Client("stranger", pkix.Name{CommonName: "line-1"})
	forced := ca.ClientTLS()
	forced.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger.TLS, nil }
	if _, ca, err := dsstest.Connect(t, s.TLSAddr(), "stranger", dsstest.Login{TLS: forced}); err == nil {
		t.Fatalf("a client certificate of an unknown CA was accepted (CONNACK %#x)", ca.ReasonCode)
	}
}

func TestAClientCertificateIsRequiredWithoutAUsersFile(t *testing.T) {
	s, ca := tlsServer(t, server.Config{TLSClientCA: "-"})
	// TLS 1.3 clients learn of the refusal at their first read or write:
	// the error is the alert "certificate required", or a closed
	// connection; never a CONNACK.
	_, ca2, err := dsstest.Connect(t, s.TLSAddr(), "no-cert", dsstest.Login{TLS: ca.ClientTLS()})
	if err == nil {
		t.Fatalf("TLS without a client certificate got a CONNACK %#x, want the handshake refused", ca2.ReasonCode)
	}
	dsstest.DialWith(t, s.TLSAddr(), "with-cert", dsstest.Login{TLS: ca.ClientTLS(ca.Client("c", pkix.Name{CommonName: "c"}))})
}

func TestTLSBelow12IsRefused(t *testing.T) {
	s, ca := tlsServer(t, server.Config{Users: usersFile(t, "alice", "pw")})
	old := ca.ClientTLS()
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if _, _, err := dsstest.Connect(t, s.TLSAddr(), "old", dsstest.Login{TLS: old, Username: "alice", Password: "pw"}); err == nil {
		t.Fatal("a TLS 1.1 handshake was accepted")
	}
}

func TestTheUsersFileIsReadAgainWhenItChanges(t *testing.T) {
	users := usersFile(t, "alice", "alice-pw")
	s := dsstest.StartServer(t, server.Config{Users: users, ReloadInterval: 10 * time.Millisecond, LoginDelay: time.Millisecond})
	alice := dsstest.DialWith(t, s.Addr(), "alice", dsstest.Login{Username: "alice", Password: "alice-pw"})
	refusedWith(t, s.Addr(), "bob", dsstest.Login{Username: "bob", Password: "bob-pw"}, 0x86)

	if err := auth.SetPassword(users, "bob", []byte("bob-pw")); err != nil {
		t.Fatal(err)
	}
	dsstest.Eventually(t, "bob can log in", func() bool {
		_, ca, err := dsstest.Connect(t, s.Addr(), "bob", dsstest.Login{Username: "bob", Password: "bob-pw"})
		return err == nil && ca.ReasonCode == 0
	})
	// alice's connection is untouched by another user's change...
	select {
	case d := <-alice.Disconnects:
		t.Fatalf("alice disconnected with %#x when bob was added", d.ReasonCode)
	default:
	}
	// ...and ends when alice is removed.
	if err := auth.DeleteUser(users, "alice"); err != nil {
		t.Fatal(err)
	}
	alice.AwaitDisconnect(0x87, "her user was removed")
	refusedWith(t, s.Addr(), "alice", dsstest.Login{Username: "alice", Password: "alice-pw"}, 0x86)

	// A users file that does not parse leaves the last one in force. It
	// is replaced whole: written in place, the reloader (every 10 ms) may
	// see it empty between the truncation and the write on a busy
	// machine, and an empty users file is a valid one.
	garbage := users + ".new"
	if err := os.WriteFile(garbage, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(garbage, users); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), ":1: want NAME:HASH") {
		t.Fatalf("Reload of a broken users file: %v", err)
	}
	dsstest.DialWith(t, s.Addr(), "bob-2", dsstest.Login{Username: "bob", Password: "bob-pw"})
}

func TestTheCertificateIsReadAgainWithoutDroppingConnections(t *testing.T) {
	ca := dsstest.NewCA(t, "dss-test")
	s, cert := tlsServerWith(t, ca, ca.Server("server"), server.Config{Users: usersFile(t, "alice", "pw"), ReloadInterval: 10 * time.Millisecond})
	login := dsstest.Login{TLS: ca.ClientTLS(), Username: "alice", Password: "pw"}
	c := dsstest.DialWith(t, s.TLSAddr(), "alice", login)
	c.Subscribe(c.ResponseTopic)
	first := servedSerial(t, s.TLSAddr(), ca)

	// Replace the files, as a certificate renewal does.
	next := ca.Server("renewed")
	copyFile(t, next.KeyFile, cert.KeyFile)
	copyFile(t, next.CertFile, cert.CertFile)
	dsstest.Eventually(t, "the new certificate is served", func() bool {
		return servedSerial(t, s.TLSAddr(), ca) != first
	})
	expect(t, "SET on the connection made before", c.Set([]string{"k", "v"}), "+OK\r\n", "any")
}

// servedSerial returns the serial number of the certificate the TLS
// listener at addr serves now.
func servedSerial(t *testing.T, addr string, ca *dsstest.CA) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, ca.ClientTLS())
	if err != nil {
		t.Fatalf("TLS dial: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func authSetPassword(path, name, pw string) error { return auth.SetPassword(path, name, []byte(pw)) }
