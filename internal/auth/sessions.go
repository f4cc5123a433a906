package auth

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
)

// Sessions are the sign-ins of the web console (docs/console.md): a user
// who signed in with the password of the users file is given a session
// token, a secret that the console's page presents as the user's
// password when it connects over MQTT, so that the page does not keep
// the password. A token is valid while its session lasts: until the
// user signs out, the session expires, the user's password changes or
// the user is removed.
type Sessions interface {
	// User returns the user a valid session token was issued to, or ""
	// when token is not one.
	User(token string) string
}

// sessionTokenPrefix starts every session token, so that a password that
// is not one costs no lookup, and a token no password check.
const sessionTokenPrefix = "dss-session-"

// NewSessionToken returns a new, random session token (256 bits).
func NewSessionToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return sessionTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// IsSessionToken reports whether password has the form of a session
// token.
func IsSessionToken(password []byte) bool {
	return len(password) == len(sessionTokenPrefix)+43 && strings.HasPrefix(string(password), sessionTokenPrefix)
}

type sessionsHolder struct{ s Sessions }

// SetSessions makes the session tokens of s valid as their users'
// passwords; nil makes none valid.
func (a *Authority) SetSessions(s Sessions) {
	if s == nil {
		a.sessions.Store(nil)
		return
	}
	a.sessions.Store(&sessionsHolder{s})
}

// sessionUser returns the user whose valid session token password is,
// or "".
func (a *Authority) sessionUser(password []byte) string {
	h := a.sessions.Load()
	if h == nil || !IsSessionToken(password) {
		return ""
	}
	return h.s.User(string(password))
}

// SessionValid reports whether password is a session token still valid
// for user: a connection that logged in with one ends when its session
// does (see broker.Reauthorize).
func (a *Authority) SessionValid(user string, password []byte) bool {
	return user != "" && a.sessionUser(password) == user
}
