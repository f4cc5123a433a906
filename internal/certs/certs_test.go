package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
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

func TestReloadReadsTheClientCAAgain(t *testing.T) {
	old, next := dsstest.NewCA(t, "old"), dsstest.NewCA(t, "next")
	srv := old.Server("s")
	caFile := t.TempDir() + "/client-ca.pem"
	copyTo := func(from string) {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(caFile, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyTo(old.CertFile)
	st, err := certs.Load(certs.Files{Cert: srv.CertFile, Key: srv.KeyFile, ClientCA: caFile}, certs.RequireClientCert)
	if err != nil {
		t.Fatal(err)
	}
	trusts := func(ca *dsstest.CA) bool {
		cfg, _ := st.ServerConfig().GetConfigForClient(&tls.ClientHelloInfo{})
		_, err := ca.Client("c", pkix.Name{CommonName: "c"}).TLS.Leaf.Verify(x509.VerifyOptions{
			Roots: cfg.ClientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err == nil
	}
	if !trusts(old) || trusts(next) {
		t.Fatal("before the reload: want the old CA's client certificates only")
	}
	copyTo(next.CertFile)
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	if trusts(old) || !trusts(next) {
		t.Fatal("after the reload: want the new CA's client certificates only")
	}
}
