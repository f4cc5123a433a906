package cli

import (
	"crypto/tls"

	"github.com/spf13/pflag"

	"github.com/dssio/dss/client"
)

// securityFlags are how a client command reaches a server that
// authenticates: TLS and its files, a user name and password.
type securityFlags struct {
	tls                bool
	ca, cert, key      string
	username, password string
}

func (s *securityFlags) add(fs *pflag.FlagSet) {
	fs.BoolVar(&s.tls, "tls", false, "connect with TLS (default port 8883); implied by --ca, --cert or an mqtts:// server")
	fs.StringVar(&s.ca, "ca", "", "PEM file of the CA that signs the server's certificate (default: the system's roots)")
	fs.StringVar(&s.cert, "cert", "", "PEM file of a client certificate, for a server that takes them (with --key)")
	fs.StringVar(&s.key, "key", "", "PEM file of the client certificate's key")
	fs.StringVar(&s.username, "username", "", "user name to log in with")
	fs.StringVar(&s.password, "password", "", "password to log in with (better: the environment variable DSS_PASSWORD, which no process list shows)")
}

// tlsConfig returns the TLS configuration the flags ask for, nil for
// none.
func (s *securityFlags) tlsConfig() (*tls.Config, error) {
	if !s.tls && s.ca == "" && s.cert == "" && s.key == "" {
		return nil, nil
	}
	return client.LoadTLS(s.ca, s.cert, s.key)
}

// passwordBytes returns the password, nil for none.
func (s *securityFlags) passwordBytes() []byte {
	if s.password == "" {
		return nil
	}
	return []byte(s.password)
}
