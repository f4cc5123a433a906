package server_test

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/auth"
	"github.com/dssio/dss/internal/console"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// consoleClient is a browser as the console's endpoints see it: cookies
// kept, and the headers a page of origin sends.
type consoleClient struct {
	t      *testing.T
	base   string
	origin string
	http   *http.Client
	csrf   string
	mqtt   struct{ Username, Password, WS string }
}

func newConsoleClient(t *testing.T, s *server.Server) *consoleClient {
	jar, _ := cookiejar.New(nil)
	base := "http://" + s.HTTPAddr()
	return &consoleClient{t: t, base: base, origin: base, http: &http.Client{Jar: jar, Timeout: dsstest.Timeout}}
}

// do sends a request to the console's session endpoint (or path) and
// returns the status and the decoded JSON body.
func (c *consoleClient) do(method, path, body string, header map[string]string) (int, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.origin != "" && method != http.MethodGet {
		req.Header.Set("Origin", c.origin)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return res.StatusCode, out
}

// signIn signs in and keeps the session's CSRF token and MQTT login.
func (c *consoleClient) signIn(user, password string) int {
	c.t.Helper()
	code, body := c.do(http.MethodPost, console.SessionPath, `{"username":"`+user+`","password":"`+password+`"}`, nil)
	if code == http.StatusOK {
		c.csrf, _ = body["csrf"].(string)
		m, _ := body["mqtt"].(map[string]any)
		c.mqtt.Username, _ = m["username"].(string)
		c.mqtt.Password, _ = m["password"].(string)
		c.mqtt.WS, _ = m["ws"].(string)
	}
	return code
}

func newConsoleAttackServer(t *testing.T) *server.Server {
	t.Helper()
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(attackPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return dsstest.StartServer(t, server.Config{
		Users:      usersFile(t, "alice", "alice-pw", "bob", "bob-pw", "mallory", "mallory-pw"),
		Policy:     policy,
		WSListen:   "127.0.0.1:0",
		HTTPListen: "127.0.0.1:0",
		LoginDelay: time.Millisecond, ReloadInterval: -1,
	})
}

func TestAttacksOnTheConsole(t *testing.T) {
	s := newConsoleAttackServer(t)
	ws := wsURL(s)

	t.Run("wrong password", func(t *testing.T) {
		c := newConsoleClient(t, s)
		for _, login := range [][2]string{{"alice", "guess"}, {"eve", "alice-pw"}, {"alice", ""}} {
			if code := c.signIn(login[0], login[1]); code != http.StatusUnauthorized {
				t.Fatalf("sign-in as %q with %q: %d", login[0], login[1], code)
			}
		}
		if u, _ := url(c.base); len(c.http.Jar.Cookies(u)) != 0 {
			t.Fatal("a refused sign-in set a cookie")
		}
		// A session token is not a password: it makes no second session.
		alice := newConsoleClient(t, s)
		alice.signIn("alice", "alice-pw")
		if code := c.signIn("alice", alice.mqtt.Password); code != http.StatusUnauthorized {
			t.Fatalf("sign-in with a session token: %d", code)
		}
		// MQTT over WebSocket checks the password as TCP does.
		refusedWith(t, "", "x1", dsstest.Login{WebSocket: ws, Username: "alice", Password: "guess"}, 0x86)
		refusedWith(t, "", "x2", dsstest.Login{WebSocket: ws}, 0x87)
	})

	t.Run("no session", func(t *testing.T) {
		c := newConsoleClient(t, s)
		for _, r := range []struct{ method, path string }{
			{http.MethodGet, console.SessionPath}, {http.MethodGet, console.StatusPath}, {http.MethodDelete, console.SessionPath},
		} {
			if code, body := c.do(r.method, r.path, "", nil); code != http.StatusUnauthorized || body["mqtt"] != nil && body["mqtt"].(map[string]any)["password"] != nil {
				t.Errorf("%s %s without a session: %d %v", r.method, r.path, code, body)
			}
		}
		// A cookie that no session has.
		u, _ := url(c.base)
		c.http.Jar.SetCookies(u, []*http.Cookie{{Name: "dss_console", Value: "forged"}})
		if code, _ := c.do(http.MethodGet, console.StatusPath, "", nil); code != http.StatusUnauthorized {
			t.Errorf("a forged cookie: %d", code)
		}
		// A session token that no session issued.
		refusedWith(t, "", "x3", dsstest.Login{WebSocket: ws, Username: "alice", Password: auth.NewSessionToken()}, 0x86)
	})

	t.Run("forged cross-site requests", func(t *testing.T) {
		c := newConsoleClient(t, s)
		c.origin = "https://evil.example"
		if code := c.signIn("alice", "alice-pw"); code != http.StatusForbidden {
			t.Fatalf("a sign-in from another origin: %d", code)
		}
		c.origin = ""
		if code, _ := c.do(http.MethodPost, console.SessionPath, `{"username":"alice","password":"alice-pw"}`, map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
			t.Fatalf("a sign-in that the browser says came from another site: %d", code)
		}
		// A form can post text/plain without a preflight; it is refused.
		if code, _ := c.do(http.MethodPost, console.SessionPath, `{"username":"alice","password":"alice-pw"}`, map[string]string{"Content-Type": "text/plain"}); code != http.StatusUnsupportedMediaType {
			t.Fatalf("a sign-in as text/plain: %d", code)
		}

		// Signed in, a sign-out without the CSRF token, or from another
		// origin, does nothing.
		c.origin = c.base
		if code := c.signIn("alice", "alice-pw"); code != http.StatusOK {
			t.Fatalf("sign-in: %d", code)
		}
		if code, _ := c.do(http.MethodDelete, console.SessionPath, "", nil); code != http.StatusForbidden {
			t.Fatalf("a sign-out without the CSRF token: %d", code)
		}
		if code, _ := c.do(http.MethodDelete, console.SessionPath, "", map[string]string{console.CSRFHeader: "forged"}); code != http.StatusForbidden {
			t.Fatalf("a sign-out with a wrong CSRF token: %d", code)
		}
		if code, _ := c.do(http.MethodDelete, console.SessionPath, "", map[string]string{console.CSRFHeader: c.csrf, "Origin": "https://evil.example"}); code != http.StatusForbidden {
			t.Fatalf("a sign-out from another origin: %d", code)
		}
		if code, _ := c.do(http.MethodGet, console.SessionPath, "", nil); code != http.StatusOK {
			t.Fatalf("the session after the forged sign-outs: %d", code)
		}
		// A page of another site cannot open a WebSocket with the
		// browser's position either.
		_, _, resp := upgrade(t, s.WSAddr(), map[string]string{"Origin": "https://evil.example"})
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a WebSocket from another site: %s", resp.Status)
		}
		// The page's answers carry the headers that keep it out of
		// frames and its secrets out of caches.
		res, err := c.http.Get(c.base + "/")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		for h, want := range map[string]string{"X-Frame-Options": "DENY", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
			if res.Header.Get(h) != want {
				t.Errorf("%s: %q, want %q", h, res.Header.Get(h), want)
			}
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("Content-Security-Policy: %q", csp)
		}
	})

	t.Run("another user's keys", func(t *testing.T) {
		bob := dsstest.DialWith(t, s.Addr(), "bob-app", dsstest.Login{Username: "bob", Password: "bob-pw"})
		bob.Subscribe(bob.ResponseTopic)
		expect(t, "bob's SET", bob.Set([]string{"app/bob/secret", "b"}), "+OK\r\n", "any")

		c := newConsoleClient(t, s)
		if code := c.signIn("alice", "alice-pw"); code != http.StatusOK {
			t.Fatalf("sign-in: %d", code)
		}
		// The page's login: alice, with her session's token.
		page := dsstest.DialWith(t, "", "console-alice", dsstest.Login{WebSocket: ws, Username: c.mqtt.Username, Password: c.mqtt.Password})
		page.Subscribe(page.ResponseTopic)
		expect(t, "alice's own SET", page.Set([]string{"app/alice/x", "a"}), "+OK\r\n", "any")
		notAuthorized(t, "GET", page.Request(dsstest.Cmd("GET", "app/bob/secret")))
		notAuthorized(t, "KEYINFO", page.Request(dsstest.Cmd("KEYINFO", "app/bob/secret")))
		notAuthorized(t, "SET", page.Set([]string{"app/bob/secret", "x"}))
		notAuthorized(t, "DEL", page.Request(dsstest.Cmd("DEL", "app/bob/secret")))
		notAuthorized(t, "KEYNOTIFY", page.Request(dsstest.Cmd("KEYNOTIFY", "app/bob/secret")))
		if got := string(page.Request(dsstest.Cmd("SCAN", "app/*")).Payload); strings.Contains(got, "bob") || !strings.Contains(got, "app/alice/x") {
			t.Fatalf("alice's SCAN lists %q", got)
		}
		// A pattern registration hears nothing of bob's keys.
		expect(t, "KEYNOTIFY of a pattern", page.Request(dsstest.Cmd("KEYNOTIFY", "app/*", "PATTERN")), "+OK\r\n", "")
		expect(t, "bob's change", bob.Set([]string{"app/bob/secret", "b2"}), "+OK\r\n", "any")
		expect(t, "alice's change", page.Set([]string{"app/alice/x", "a2"}), "+OK\r\n", "any")
		select {
		case m := <-page.Messages:
			if strings.Contains(m.Topic, strings.ToUpper(hexOf("app/bob/secret"))) {
				t.Fatalf("alice heard of bob's key: %s", m.Topic)
			}
		case <-time.After(dsstest.Timeout):
			t.Fatal("no notification of alice's own change")
		}
		// Her token is hers: it is not bob's password.
		refusedWith(t, "", "as-bob", dsstest.Login{WebSocket: ws, Username: "bob", Password: c.mqtt.Password}, 0x86)
		// Nor does it reach bob's responses.
		sa, err := page.Paho.Subscribe(t.Context(), subscribeTo(bob.ResponseTopic))
		if sa == nil || sa.Reasons[0] != 0x87 {
			t.Fatalf("alice's page subscribing to bob's responses: %v %v", sa, err)
		}
	})

	t.Run("a session ends its connections", func(t *testing.T) {
		c := newConsoleClient(t, s)
		if code := c.signIn("alice", "alice-pw"); code != http.StatusOK {
			t.Fatalf("sign-in: %d", code)
		}
		page := dsstest.DialWith(t, "", "console-ends", dsstest.Login{WebSocket: ws, Username: c.mqtt.Username, Password: c.mqtt.Password})
		if code, _ := c.do(http.MethodDelete, console.SessionPath, "", map[string]string{console.CSRFHeader: c.csrf}); code != http.StatusNoContent {
			t.Fatalf("sign-out: %d", code)
		}
		select {
		case d := <-page.Disconnects:
			if d.ReasonCode != 0x87 {
				t.Fatalf("DISCONNECT %#x", d.ReasonCode)
			}
		case <-time.After(dsstest.Timeout):
			t.Fatal("the page's connection outlived its session")
		}
		refusedWith(t, "", "console-again", dsstest.Login{WebSocket: ws, Username: c.mqtt.Username, Password: c.mqtt.Password}, 0x86)
		if code, _ := c.do(http.MethodGet, console.StatusPath, "", nil); code != http.StatusUnauthorized {
			t.Fatalf("status after sign-out: %d", code)
		}
	})
}

func url(s string) (*neturl.URL, error) { return neturl.Parse(s) }

func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }

func subscribeTo(filter string) *paho.Subscribe {
	return &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}
}

// A password change ends the sessions of the user, and the connections
// that logged in with their tokens.
func TestAPasswordChangeEndsConsoleSessions(t *testing.T) {
	users := usersFile(t, "alice", "alice-pw")
	s := dsstest.StartServer(t, server.Config{Users: users, WSListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0",
		LoginDelay: time.Millisecond, ReloadInterval: -1})
	c := newConsoleClient(t, s)
	if code := c.signIn("alice", "alice-pw"); code != http.StatusOK {
		t.Fatalf("sign-in: %d", code)
	}
	page := dsstest.DialWith(t, "", "console-pw", dsstest.Login{WebSocket: wsURL(s), Username: "alice", Password: c.mqtt.Password})
	if err := auth.SetPassword(users, "alice", []byte("new-pw")); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-page.Disconnects:
	case <-time.After(dsstest.Timeout):
		t.Fatal("the page's connection outlived the password")
	}
	if code, _ := c.do(http.MethodGet, console.SessionPath, "", nil); code != http.StatusUnauthorized {
		t.Fatalf("the session after the password changed: %d", code)
	}
}

// Without authentication, the console serves this machine only: a page
// that reaches it through another name (DNS rebinding) is refused.
func TestTheConsoleWithoutAuthenticationServesThisMachineOnly(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{WSListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0"})
	for _, path := range []string{"/", "/console/console.js", console.SessionPath, console.StatusPath} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.HTTPAddr()+path, nil)
		req.Host = "evil.example"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s with Host evil.example: %d", path, res.StatusCode)
		}
		if code, _ := dsstest.HTTPGet(t, s.HTTPAddr(), path); code != http.StatusOK {
			t.Errorf("%s from this machine: %d", path, code)
		}
	}
	c := newConsoleClient(t, s)
	if code, body := c.do(http.MethodGet, console.SessionPath, "", nil); code != http.StatusOK || body["auth"] != false {
		t.Fatalf("session without authentication: %d %v", code, body)
	}
	if code := c.signIn("anyone", "x"); code != http.StatusConflict {
		t.Fatalf("a sign-in without authentication: %d", code)
	}
}
