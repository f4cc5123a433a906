package certs_test

import (
	"crypto/tls"
	"os"
	"testing"

	"github.com/dssio/dss/internal/certs"
	"github.com/dssio/dss/internal/dsstest"
)

func TestReloadKeepsThePreviousCertificateOnError(t *testing.T) {
	ca := dsstest.NewCA(t, "c")
	a, b := ca.Server("a"), ca.Server("b")
	st, err := certs.Load(certs.Files{Cert: a.CertFile, Key: a.KeyFile}, certs.NoClientCert)
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		cfg, _ := st.ServerConfig().GetConfigForClient(&tls.ClientHelloInfo{})
		if cfg.MinVersion != tls.VersionTLS12 {
			t.Fatalf("minimum TLS version %#x, want 1.2", cfg.MinVersion)
		}
		return cfg.Certificates[0].Leaf.SerialNumber.String()
	}
	first := served()
	// A key that does not belong to the certificate: refused, the old pair
	// stays.
	data, _ := os.ReadFile(b.KeyFile)
	if err := os.WriteFile(a.KeyFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.Reload(); err == nil {
		t.Fatal("a mismatched key was accepted")
	}
	if served() != first {
		t.Fatal("a failed reload changed the certificate")
	}
	data, _ = os.ReadFile(b.CertFile)
	if err := os.WriteFile(a.CertFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	if served() == first {
		t.Fatal("the new certificate is not served")
	}
}

func TestClientCertificateModes(t *testing.T) {
	ca := dsstest.NewCA(t, "c")
	srv := ca.Server("s")
	for mode, want := range map[certs.ClientAuth]tls.ClientAuthType{
		certs.VerifyClientCert:  tls.VerifyClientCertIfGiven,
		certs.RequireClientCert: tls.RequireAndVerifyClientCert,
	} {
		st, err := certs.Load(certs.Files{Cert: srv.CertFile, Key: srv.KeyFile, ClientCA: ca.CertFile}, mode)
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := st.ServerConfig().GetConfigForClient(&tls.ClientHelloInfo{})
		if cfg.ClientAuth != want || cfg.ClientCAs == nil {
			t.Fatalf("mode %d: client auth %v, want %v with the CA", mode, cfg.ClientAuth, want)
		}
	}
	if _, err := certs.Load(certs.Files{Cert: srv.CertFile}, certs.NoClientCert); err == nil {
		t.Fatal("a certificate without a key was accepted")
	}
	if _, err := certs.Load(certs.Files{Cert: srv.CertFile, Key: srv.KeyFile, ClientCA: srv.KeyFile}, certs.VerifyClientCert); err == nil {
		t.Fatal("a client CA file without certificates was accepted")
	}
}
