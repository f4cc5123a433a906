package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"time"

	"github.com/dssio/dss/internal/auth"
)

// Limits of the sessions.
const (
	// SessionLifetime is how long a session lasts at most.
	SessionLifetime = 12 * time.Hour
	// SessionIdle is how long a session lasts without a request of its
	// page (an open page asks for the status every few seconds).
	SessionIdle = 30 * time.Minute
	// maxSessions bounds the sessions held; past it the one used least
	// recently ends. maxSessionsPerUser does the same per user.
	maxSessions        = 10000
	maxSessionsPerUser = 32
)

// session is one sign-in.
type session struct {
	user string
	// hash is the user's password hash at sign-in: a change of the
	// password ends the session.
	hash    string
	csrf    string // sent with every request that changes something
	token   string // the MQTT password (auth.NewSessionToken)
	created time.Time
	used    time.Time // guarded by sessions.mu
}

// sessions holds the sessions by the digest of their cookie and of their
// token (the secrets themselves are compared only by digest, so that
// the lookups take the same time whatever the secret). Safe for
// concurrent use.
type sessions struct {
	auth *auth.Authority
	now  func() time.Time

	mu      sync.Mutex
	byID    map[[32]byte]*session // guarded by mu
	byToken map[[32]byte]*session // guarded by mu
}

var _ auth.Sessions = (*sessions)(nil)

func newSessions(a *auth.Authority, now func() time.Time) *sessions {
	return &sessions{auth: a, now: now, byID: map[[32]byte]*session{}, byToken: map[[32]byte]*session{}}
}

func digest(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

func randomSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session for user, whose password hash is hash, and
// returns its cookie value.
func (s *sessions) create(user, hash string) (string, *session) {
	id := randomSecret()
	now := s.now()
	ss := &session{user: user, hash: hash, csrf: randomSecret(), token: auth.NewSessionToken(), created: now, used: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictLocked(user)
	s.byID[digest(id)] = ss
	s.byToken[digest(ss.token)] = ss
	return id, ss
}

// evictLocked makes room for one more session of user: past a limit,
// the session used least recently (of the user's own, for the user's
// limit) ends.
func (s *sessions) evictLocked(user string) {
	mine := 0
	for _, ss := range s.byID {
		if ss.user == user {
			mine++
		}
	}
	for mine >= maxSessionsPerUser || len(s.byID) >= maxSessions {
		own := mine >= maxSessionsPerUser
		var k [32]byte
		var o *session
		for id, ss := range s.byID {
			if own && ss.user != user {
				continue
			}
			if o == nil || ss.used.Before(o.used) {
				k, o = id, ss
			}
		}
		if o == nil {
			return
		}
		if o.user == user {
			mine--
		}
		s.removeLocked(k, o)
	}
}

func (s *sessions) removeLocked(id [32]byte, ss *session) {
	delete(s.byID, id)
	delete(s.byToken, digest(ss.token))
}

// validLocked reports whether ss is still valid at now.
func (s *sessions) validLocked(ss *session, now time.Time) bool {
	if now.Sub(ss.created) >= SessionLifetime || now.Sub(ss.used) >= SessionIdle {
		return false
	}
	return s.auth != nil && s.auth.UserHash(ss.user) == ss.hash
}

// get returns the valid session of the cookie value id, and marks it
// used; nil when there is none.
func (s *sessions) get(id string) *session {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	k := digest(id)
	ss := s.byID[k]
	if ss == nil {
		return nil
	}
	if !s.validLocked(ss, now) {
		s.removeLocked(k, ss)
		return nil
	}
	ss.used = now
	return ss
}

// end ends the session of the cookie value id; it reports whether there
// was one.
func (s *sessions) end(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := digest(id)
	ss := s.byID[k]
	if ss == nil {
		return false
	}
	s.removeLocked(k, ss)
	return true
}

// User returns the user of a valid session token, for auth.Sessions.
// Presenting the token over MQTT does not count as use of the session:
// its page's requests keep it alive.
func (s *sessions) User(token string) string {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byToken[digest(token)]
	if ss == nil || !s.validLocked(ss, now) {
		return ""
	}
	return ss.user
}

// sweep ends the sessions that are no longer valid, and reports how many
// it ended.
func (s *sessions) sweep() int {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, ss := range s.byID {
		if !s.validLocked(ss, now) {
			s.removeLocked(k, ss)
			n++
		}
	}
	return n
}
