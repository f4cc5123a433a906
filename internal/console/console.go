package console

import (
	"context"
	"crypto/subtle"
	"embed"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dssio/dss/internal/auth"
)

//go:embed assets
var assets embed.FS

// Config configures the console.
type Config struct {
	// Auth authenticates; nil means the server has no authentication,
	// and the console serves this machine only.
	Auth *auth.Authority
	// SignIn reports whether users may sign in with a password (a users
	// file is configured).
	SignIn bool
	// WSAddr and WSSAddr are the addresses of the WebSocket listeners
	// the page connects to ("" when there is none).
	WSAddr, WSSAddr string
	// AdminToken, when set, also lets a request with it
	// (Authorization: Bearer) read /v1/status.
	AdminToken string
	// Status reads the node's figures for /v1/status.
	Status func(ctx context.Context) Status
	// Revoke is called after sessions ended, so that the MQTT
	// connections that logged in with their tokens are ended too.
	Revoke func()
	// LoginDelay is the delay of the answer to a failed sign-in, doubling
	// with each failure in a row from the same address; 0 means 100 ms.
	LoginDelay time.Duration
	// Logger receives the log lines; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of the sessions; nil means time.Now.
	Now func() time.Time
}

// Console is the web console of one server.
type Console struct {
	cfg      Config
	log      *slog.Logger
	sessions *sessions
	throttle *auth.Throttle
	static   http.Handler

	ctx    context.Context // ends when the console closes
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns the console; Start begins its expiry of sessions.
func New(cfg Config) *Console {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LoginDelay <= 0 {
		cfg.LoginDelay = 100 * time.Millisecond
	}
	sub, _ := fs.Sub(assets, "assets")
	c := &Console{
		cfg:      cfg,
		log:      cfg.Logger,
		sessions: newSessions(cfg.Auth, cfg.Now),
		throttle: auth.NewThrottle(cfg.LoginDelay, 32*cfg.LoginDelay),
		static:   http.StripPrefix("/console/", http.FileServerFS(sub)),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if cfg.Auth != nil && cfg.SignIn {
		cfg.Auth.SetSessions(c.sessions)
	}
	return c
}

// Register adds the console's routes to mux.
func (c *Console) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", c.guard(c.serveIndex))
	mux.HandleFunc("GET /console/", c.guard(c.serveAsset))
	mux.HandleFunc("GET "+SessionPath, c.guard(c.serveSession))
	mux.HandleFunc("POST "+SessionPath, c.guard(c.serveSignIn))
	mux.HandleFunc("DELETE "+SessionPath, c.guard(c.serveSignOut))
	mux.HandleFunc("GET "+StatusPath, c.guard(c.serveStatus))
}

// Start begins to end expired sessions, once a minute.
func (c *Console) Start() {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-c.ctx.Done():
				return
			case <-t.C:
				if c.sessions.sweep() > 0 && c.cfg.Revoke != nil {
					c.cfg.Revoke()
				}
			}
		}
	}()
}

// Close stops the expiry of sessions, and ends the sign-ins that wait
// for their delay.
func (c *Console) Close() {
	c.cancel()
	c.wg.Wait()
}

// guard serves a route of the console to whom the console serves:
// without authentication, requests from this machine that name a
// loopback host only (a site that rebinds its name to 127.0.0.1 names its
// own); and sets the headers every answer carries.
func (c *Console) guard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		if c.cfg.Auth == nil && (!fromLoopback(r) || !loopbackHost(hostOf(r.Host))) {
			http.Error(w, "this server has no authentication configured: its console serves this machine only (http://localhost or http://127.0.0.1)", http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

// serveIndex serves the page, with a content security policy that lets
// it load its own assets and connect to the WebSocket listeners of the
// host it was loaded from, and nothing else.
func (c *Console) serveIndex(w http.ResponseWriter, r *http.Request) {
	host := hostOf(r.Host)
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	connect := []string{"'self'"}
	if p := port(c.cfg.WSAddr); p != "" {
		connect = append(connect, "ws://"+host+":"+p)
	}
	if p := port(c.cfg.WSSAddr); p != "" {
		connect = append(connect, "wss://"+host+":"+p)
	}
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src "+
		strings.Join(connect, " ")+"; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(b)
}

// serveAsset serves a script, a style sheet or an icon. They change only
// with the binary: the page asks again on every load (no-cache), and is
// answered 304 while they have not.
func (c *Console) serveAsset(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	c.static.ServeHTTP(w, r)
}

// port returns the port of a listener's address, "" for none.
func port(addr string) string {
	if addr == "" {
		return ""
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return p
}

// fromLoopback reports whether r came from this machine.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostOf returns the host of a Host header, without its port.
func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// loopbackHost reports whether host names this machine's loopback
// interface.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// adminToken reports whether r carries the admin token.
func (c *Console) adminToken(r *http.Request) bool {
	if c.cfg.AdminToken == "" {
		return false
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(c.cfg.AdminToken)) == 1
}
