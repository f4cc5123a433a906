package auth

import (
	"crypto/x509"
	"sync/atomic"
)

// Authority holds what authentication and authorization decide by: the
// users file and the policy in force, each replaced whole when its file
// is read again. Safe for concurrent use.
type Authority struct {
	clientCerts    bool
	allowAnonymous bool
	users          atomic.Pointer[Users]  // nil: no users file
	policy         atomic.Pointer[Policy] // nil: no policy
	sessions       atomic.Pointer[sessionsHolder]
}

// Options configure an Authority.
type Options struct {
	// Users is the users file's content; nil means no password logins.
	Users *Users
	// ClientCerts accepts verified client certificates as credentials.
	ClientCerts bool
	// AllowAnonymous admits clients without credentials, as the
	// principal "anonymous".
	AllowAnonymous bool
	// Policy is the authorization policy; nil grants an authenticated
	// client everything that isolation does not forbid.
	Policy *Policy
}

// NewAuthority returns an Authority, or nil when opts configure no
// authentication (no users and no client certificates): then every
// client is admitted, without isolation.
func NewAuthority(opts Options) *Authority {
	if opts.Users == nil && !opts.ClientCerts {
		return nil
	}
	a := &Authority{clientCerts: opts.ClientCerts, allowAnonymous: opts.AllowAnonymous}
	a.users.Store(opts.Users)
	a.policy.Store(opts.Policy)
	return a
}

// SetUsers puts a new reading of the users file in force.
func (a *Authority) SetUsers(u *Users) { a.users.Store(u) }

// SetPolicy puts a new policy in force.
func (a *Authority) SetPolicy(p *Policy) { a.policy.Store(p) }

// Grants returns what the policy in force grants p; nil when there is no
// policy, which grants everything.
func (a *Authority) Grants(p *Principal) *Grants {
	if pol := a.policy.Load(); pol != nil {
		return pol.Grants(p)
	}
	return nil
}

// Credentials are what a connecting client presents.
type Credentials struct {
	ClientID    string
	Username    string
	HasUsername bool
	Password    []byte
	HasPassword bool
	// Certificate is the client's certificate, verified by the TLS
	// handshake against the client CA; nil without one.
	Certificate *x509.Certificate
}

// Authenticate establishes who c is: a user whose password matches, or
// the holder of a verified client certificate, or (when allowed)
// anonymous. A client that presents a password must get it right, even
// if it has a certificate too.
func (a *Authority) Authenticate(c Credentials) (Principal, error) {
	p := Principal{ClientID: c.ClientID}
	if c.Certificate != nil && a.clientCerts {
		p.Attributes = CertificateAttributes(c.Certificate)
	}
	users := a.users.Load()
	switch {
	case c.HasPassword || (c.HasUsername && users != nil && p.Attributes == nil):
		if users == nil {
			return p, ErrBadCredentials
		}
		if a.sessionUser(c.Password) == c.Username && c.Username != "" {
			if _, ok := users.Hash(c.Username); ok {
				p.Username = c.Username
				return p, nil
			}
		}
		if err := users.Verify(c.Username, c.Password); err != nil {
			return p, err
		}
		p.Username = c.Username
		return p, nil
	case p.Attributes != nil, a.allowAnonymous:
		return p, nil
	}
	return p, ErrNoCredentials
}

// StillValid reports whether a principal authenticated earlier would
// still be: its user still exists with the same password hash, hash the
// text of the hash it logged in with.
func (a *Authority) StillValid(p *Principal, hash string) bool {
	if p.Username == "" {
		return true
	}
	users := a.users.Load()
	if users == nil {
		return false
	}
	h, ok := users.Hash(p.Username)
	return ok && h == hash
}

// UserHash returns the text of the hash of user name in force, for
// StillValid.
func (a *Authority) UserHash(name string) string {
	if u := a.users.Load(); u != nil {
		h, _ := u.Hash(name)
		return h
	}
	return ""
}
