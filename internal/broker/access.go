package broker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/auth"
)

// access is what authentication established for a connection; it is the
// connection's mqtt.Client.Auth when authentication is on.
type access struct {
	principal auth.Principal
	// identity names the principal for the rule that a client id held by
	// one principal cannot be taken over by another.
	identity string
	// hash is the text of the password hash the user logged in with, to
	// tell when the users file changed it.
	hash string
}

// accessOf returns cl's access, nil when authentication is off.
func accessOf(cl *mqtt.Client) *access {
	a, _ := cl.Auth.(*access)
	return a
}

// Reason codes of refused connections: the broker library's own, which
// it translates for MQTT 3.1.1 clients.
var (
	codeBadCredentials = packets.ErrBadUsernameOrPassword // 0x86
	codeNotAuthorized  = packets.ErrNotAuthorized         // 0x87
	codeLoginShutdown  = packets.ErrServerUnavailable     // 0x88
)

// authenticate establishes who cl is, or refuses it with the reason
// code of its CONNACK. Failures are logged without the password and
// slowed per address (see auth.Throttle).
func (b *Broker) authenticate(cl *mqtt.Client, pk *packets.Packet) error {
	done, err := b.throttle.Admit(b.loginCtx, cl.Net.Remote)
	if err != nil {
		return codeLoginShutdown
	}
	c := &pk.Connect
	p, err := b.cfg.Auth.Authenticate(auth.Credentials{
		ClientID:    cl.ID,
		Username:    string(c.Username),
		HasUsername: c.UsernameFlag,
		Password:    c.Password,
		HasPassword: c.PasswordFlag,
		Certificate: peerCertificate(cl),
	})
	done(err != nil)
	if err != nil {
		code := codeNotAuthorized
		if errors.Is(err, auth.ErrBadCredentials) {
			code = codeBadCredentials
		}
		b.loginRefused(cl, c, code, err.Error())
		return code
	}
	cl.Auth = &access{principal: p, identity: p.Identity(), hash: b.cfg.Auth.UserHash(p.Username)}
	return nil
}

// loginRefused counts and logs a refused login: who, from where, why;
// never the password.
func (b *Broker) loginRefused(cl *mqtt.Client, c *packets.ConnectParams, code packets.Code, reason string) {
	b.metrics.LoginsRefused.WithLabelValues(code.Reason).Inc()
	if b.loginLog.Allow() {
		b.log.Warn("login refused", "client", cl.ID, "username", string(c.Username), "remote", cl.Net.Remote,
			"listener", cl.Net.Listener, "code", code.Code, "reason", reason)
	}
}

// peerCertificate returns the client certificate the TLS handshake of
// cl's connection verified, or nil.
func peerCertificate(cl *mqtt.Client) *x509.Certificate {
	tc, ok := cl.Net.Conn.(*tls.Conn)
	if !ok {
		return nil
	}
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return nil
	}
	return st.VerifiedChains[0][0]
}
