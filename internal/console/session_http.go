package console

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dssio/dss/internal/auth"
)

// The console's endpoints (docs/console.md).
const (
	// SessionPath signs in (POST), tells the page its session (GET)
	// and signs out (DELETE).
	SessionPath = "/v1/console/session"
	// StatusPath serves the node's figures (GET), as JSON.
	StatusPath = "/v1/status"
	// CSRFHeader carries the session's CSRF token on a request that
	// changes something.
	CSRFHeader = "X-DSS-CSRF"
)

// cookieName names the session cookie: with TLS, a __Host- cookie, which
// browsers keep to this host, https and path / only.
func cookieName(r *http.Request) string {
	if r.TLS != nil {
		return "__Host-dss_console"
	}
	return "dss_console"
}

// sessionInfo is what the page learns of its session.
type sessionInfo struct {
	// Auth reports whether the server authenticates; without it nobody
	// signs in, and the page connects without credentials.
	Auth bool `json:"auth"`
	// SignIn reports whether users may sign in with a password.
	SignIn bool   `json:"signIn"`
	User   string `json:"user,omitempty"`
	CSRF   string `json:"csrf,omitempty"`
	// Expires is when the session ends at the latest.
	Expires *time.Time `json:"expires,omitempty"`
	MQTT    mqttInfo   `json:"mqtt"`
	Error   string     `json:"error,omitempty"`
}

// mqttInfo tells the page how to connect over MQTT over WebSocket: to
// the ports of the WebSocket listeners, on the host it was loaded from,
// with the user name and the session token as password.
type mqttInfo struct {
	WS       string `json:"ws,omitempty"`
	WSS      string `json:"wss,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

func (c *Console) info(ss *session) sessionInfo {
	in := sessionInfo{Auth: c.cfg.Auth != nil, SignIn: c.cfg.Auth != nil && c.cfg.SignIn,
		MQTT: mqttInfo{WS: port(c.cfg.WSAddr), WSS: port(c.cfg.WSSAddr)}}
	if ss != nil {
		exp := ss.created.Add(SessionLifetime)
		in.User, in.CSRF, in.Expires = ss.user, ss.csrf, &exp
		in.MQTT.Username, in.MQTT.Password = ss.user, ss.token
	}
	return in
}

// session returns the valid session of r's cookie, or nil.
func (c *Console) session(r *http.Request) *session {
	ck, err := r.Cookie(cookieName(r))
	if err != nil || ck.Value == "" {
		return nil
	}
	return c.sessions.get(ck.Value)
}

// serveSession tells the page its session: 401 without one, when the
// server authenticates.
func (c *Console) serveSession(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Auth == nil {
		writeJSON(w, http.StatusOK, c.info(nil))
		return
	}
	ss := c.session(r)
	if ss == nil {
		in := c.info(nil)
		in.Error = "sign in"
		if !in.SignIn {
			in.Error = errNoUsers
		}
		writeJSON(w, http.StatusUnauthorized, in)
		return
	}
	writeJSON(w, http.StatusOK, c.info(ss))
}

const errNoUsers = "the console signs in users of the users file (dss serve --users), and this server has none"

// serveSignIn signs a user in with the password of the users file.
func (c *Console) serveSignIn(w http.ResponseWriter, r *http.Request) {
	if err := sameOrigin(r); err != nil {
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	switch {
	case c.cfg.Auth == nil:
		writeError(w, http.StatusConflict, "this server has no authentication configured: nobody signs in")
		return
	case !c.cfg.SignIn:
		writeError(w, http.StatusConflict, errNoUsers)
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "send the user name and password as JSON (Content-Type: application/json)")
		return
	}
	var in struct{ Username, Password string }
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&in); err != nil || in.Username == "" {
		writeError(w, http.StatusBadRequest, `send {"username": "...", "password": "..."}`)
		return
	}
	done, err := c.throttle.Admit(c.ctx, r.RemoteAddr)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "the server is shutting down")
		return
	}
	var p auth.Principal
	if auth.IsSessionToken([]byte(in.Password)) {
		// A session does not make another: it would outlive its
		// lifetime.
		err = auth.ErrBadCredentials
	} else {
		p, err = c.cfg.Auth.Authenticate(auth.Credentials{Username: in.Username, HasUsername: true, Password: []byte(in.Password), HasPassword: true})
	}
	if err == nil && p.Username == "" {
		err = auth.ErrBadCredentials
	}
	done(err != nil)
	if err != nil {
		c.log.Warn("console sign-in refused", "username", in.Username, "remote", r.RemoteAddr, "reason", err.Error())
		writeError(w, http.StatusUnauthorized, "wrong user name or password")
		return
	}
	id, ss := c.sessions.create(p.Username, c.cfg.Auth.UserHash(p.Username))
	http.SetCookie(w, &http.Cookie{
		Name: cookieName(r), Value: id, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(SessionLifetime / time.Second),
	})
	c.log.Info("console sign-in", "username", p.Username, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, c.info(ss))
}

// serveSignOut ends the session, and the MQTT connections that logged in
// with its token.
func (c *Console) serveSignOut(w http.ResponseWriter, r *http.Request) {
	if err := sameOrigin(r); err != nil {
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	ss := c.session(r)
	if ss == nil {
		writeError(w, http.StatusUnauthorized, "no session")
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(ss.csrf)) != 1 {
		writeError(w, http.StatusForbidden, "the request lacks the session's CSRF token ("+CSRFHeader+")")
		return
	}
	ck, _ := r.Cookie(cookieName(r))
	c.sessions.end(ck.Value)
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: "", Path: "/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	c.log.Info("console sign-out", "username", ss.user, "remote", r.RemoteAddr)
	if c.cfg.Revoke != nil {
		c.cfg.Revoke()
	}
	w.WriteHeader(http.StatusNoContent)
}

// sameOrigin refuses a request that a page of another origin made: its
// Origin (which browsers send with every POST and DELETE) must be this
// server's scheme and host, and without one, the browser's Sec-Fetch-Site
// must not say it came from another site.
func sameOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			return errors.New("a request from another site")
		}
		return nil
	}
	u, err := url.Parse(origin)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if err != nil || u.Scheme != scheme || !strings.EqualFold(u.Host, r.Host) {
		return errors.New("a request from another origin (" + origin + ")")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
