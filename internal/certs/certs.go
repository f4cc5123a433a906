// Package certs serves the server's TLS certificate and the CA that
// client certificates are checked against, from files that are read again
// on demand (SIGHUP, or a change seen on disk): connections already made
// keep going, new handshakes use what was read last. A reading that
// fails leaves the previous one in force.
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// ClientAuth says what the TLS listener asks of clients.
type ClientAuth int

const (
	// NoClientCert asks for no client certificate.
	NoClientCert ClientAuth = iota
	// VerifyClientCert checks a client certificate when one is sent: a
	// client may log in with a password instead.
	VerifyClientCert
	// RequireClientCert refuses the handshake without a valid client
	// certificate.
	RequireClientCert
)

// Files names the PEM files: a certificate chain and its key, and
// optionally the CA certificates that sign client certificates.
type Files struct {
	Cert, Key, ClientCA string
}

// Store holds the TLS configuration read from Files.
type Store struct {
	files Files
	auth  ClientAuth
	cur   atomic.Pointer[tls.Config]
}

// Load reads files and returns a Store that serves them. With a ClientCA,
// auth must not be NoClientCert.
func Load(files Files, auth ClientAuth) (*Store, error) {
	if files.Cert == "" || files.Key == "" {
		return nil, errors.New("certs: TLS needs both a certificate and a key file")
	}
	if (files.ClientCA != "") != (auth != NoClientCert) {
		return nil, errors.New("certs: client certificates need a client CA file, and a client CA file needs them")
	}
	s := &Store{files: files, auth: auth}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the files again. On error the previous configuration stays
// in force.
func (s *Store) Reload() error {
	cert, err := tls.LoadX509KeyPair(s.files.Cert, s.files.Key)
	if err != nil {
		return fmt.Errorf("certs: %s, %s: %w", s.files.Cert, s.files.Key, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
	}
	if s.files.ClientCA != "" {
		pem, err := os.ReadFile(s.files.ClientCA)
		if err != nil {
			return fmt.Errorf("certs: client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("certs: client CA %s: no PEM certificate in it", s.files.ClientCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if s.auth == RequireClientCert {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	s.cur.Store(cfg)
	return nil
}

// Paths returns the files the store reads, to watch them for changes.
func (s *Store) Paths() []string {
	p := []string{s.files.Cert, s.files.Key}
	if s.files.ClientCA != "" {
		p = append(p, s.files.ClientCA)
	}
	return p
}

// ServerConfig returns the configuration for a TLS listener: each
// handshake takes the files' last reading.
func (s *Store) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.cur.Load(), nil
		},
	}
}

// Leaf returns the certificate served now, parsed.
func (s *Store) Leaf() *x509.Certificate {
	return s.cur.Load().Certificates[0].Leaf
}
