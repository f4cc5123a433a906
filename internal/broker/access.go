package broker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"sync/atomic"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/auth"
	"github.com/dssio/dss/internal/wire"
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
	// session is the console session token the client logged in with,
	// "" for a password or a certificate: the connection ends with the
	// session.
	session string
	// iso keeps the client's own topics to it, and other clients' from it.
	iso auth.Isolation
	// grants is what the policy in force grants the principal; nil when
	// there is no policy (everything isolation allows).
	grants atomic.Pointer[auth.Grants]
	// revoked is set once the principal's user is gone or its password
	// changed: what the connection still does (its Will, sent after its
	// end) is refused.
	revoked atomic.Bool
}

// mayPublish reports whether the client may publish on topic.
func (a *access) mayPublish(topic string) bool {
	if !a.iso.MayPublish(topic) || a.revoked.Load() {
		return false
	}
	g := a.grants.Load()
	return g == nil || g.Publish(topic)
}

// mayRead reports whether the client may subscribe to filter, or receive
// a message on it (a topic): its own topics always, other clients' never,
// the rest as the policy grants.
func (a *access) mayRead(filter string) bool {
	switch a.iso.Class(filter) {
	case auth.Own:
		return true
	case auth.Foreign:
		return false
	}
	g := a.grants.Load()
	return g == nil || g.Subscribe(filter)
}

// mayRequest reports whether the client may make the state store request
// req: GET, KEYINFO and KEYNOTIFY read its key, SET, DEL and VDEL write
// it.
func (a *access) mayRequest(req *wire.Request) bool {
	g := a.grants.Load()
	if g == nil {
		return true
	}
	switch {
	case req.Verb == wire.VerbScan, req.Verb == wire.VerbKeyNotify && req.Pattern:
		// Its key is a pattern, not a key: the listing, or the
		// notifications, leave out every key the client may not read
		// (readable).
		return true
	case req.Verb == wire.VerbGet, req.Verb == wire.VerbKeyInfo, req.Verb == wire.VerbKeyNotify:
		return g.Read(req.Key)
	}
	return g.Write(req.Key)
}

// readable returns the test of whether the client may read a key, for a
// listing of keys or a pattern's notifications: nil when every key may be
// read. It reads the grants in force when it is called.
func (a *access) readable() func(key string) bool {
	g := a.grants.Load()
	if g == nil {
		return nil
	}
	return func(key string) bool { return g.Read([]byte(key)) }
}

// mayReadKey reports whether the client may read key by the grants in force
// now: readable for a single key, without the function value (a
// pattern's notification asks it of each change).
func (a *access) mayReadKey(key string) bool {
	g := a.grants.Load()
	return g == nil || g.Read([]byte(key))
}

// accessOf returns cl's access, nil when authentication is off.
func accessOf(cl *mqtt.Client) *access {
	a, _ := cl.Auth.(*access)
	return a
}

// Reason codes of refused connections: the broker core's own, which
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
		Suspect:     b.throttle.Failures(cl.Net.Remote) > 0,
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
	a := &access{principal: p, identity: p.Identity(), hash: b.cfg.Auth.UserHash(p.Username), iso: auth.NewIsolation(cl.ID)}
	if p.Username != "" && auth.IsSessionToken(c.Password) {
		a.session = string(c.Password)
	}
	if g := b.cfg.Auth.Grants(&p); g != nil {
		if !g.Connect() {
			b.loginRefused(cl, c, codeNotAuthorized, "the policy grants "+a.identity+" no Connect")
			return codeNotAuthorized
		}
		a.grants.Store(g)
	}
	cl.Auth = a
	return nil
}

// sameOwner reports whether cl may take over existing, the session of
// the same client id: only a connection of the same principal may, so
// that nobody takes over another's session, its subscriptions and its
// queued messages by using its client id (which other clients may see).
func sameOwner(existing, cl *mqtt.Client) bool {
	e, n := accessOf(existing), accessOf(cl)
	if e == nil || n == nil {
		return e == nil && n == nil
	}
	return e.identity == n.identity
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
// cl's connection verified, or nil: a *tls.Conn's, or that of the TLS
// connection a WebSocket runs over.
func peerCertificate(cl *mqtt.Client) *x509.Certificate {
	tc, ok := cl.Net.Conn.(interface{ ConnectionState() tls.ConnectionState })
	if !ok {
		return nil
	}
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return nil
	}
	return st.VerifiedChains[0][0]
}
