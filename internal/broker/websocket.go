package broker

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/dssio/dss/internal/mqtt/listeners"
)

// addWebSockets binds the MQTT over WebSocket listeners that cfg asks
// for. A WebSocket connection is a client like any other: the same
// CONNECT, authentication, policy, limits and isolation; only who may
// open one differs, which admitWebSocket decides.
func (b *Broker) addWebSockets() error {
	var all []*listeners.WebSocket
	add := func(config listeners.WebSocketConfig) (*listeners.WebSocket, error) {
		l := listeners.NewWebSocket(config)
		if err := b.srv.AddListener(l); err != nil {
			return nil, fmt.Errorf("broker: WebSocket listen on %s: %w", config.Address, err)
		}
		all = append(all, l)
		return l, nil
	}
	var err error
	if a := b.cfg.WSListen; a != "" {
		if b.wsLn, err = add(listeners.WebSocketConfig{ID: "ws", Address: a, Admit: b.admitWebSocket}); err != nil {
			return err
		}
	}
	if a := b.cfg.WSSListen; a != "" {
		if b.cfg.TLS == nil {
			return errors.New("broker: a WebSocket listener over TLS needs a TLS configuration")
		}
		if b.wssLn, err = add(listeners.WebSocketConfig{ID: "wss", Address: a, TLSConfig: b.cfg.TLS, Admit: b.admitWebSocket}); err != nil {
			return err
		}
	}
	b.metrics.wsListeners.Store(&all)
	return nil
}

// WSAddr returns the address the WebSocket listener is bound to, or "".
func (b *Broker) WSAddr() string {
	if b.wsLn == nil {
		return ""
	}
	return b.wsLn.Address()
}

// WSSAddr returns the address the WebSocket listener over TLS is bound
// to, or "".
func (b *Broker) WSSAddr() string {
	if b.wssLn == nil {
		return ""
	}
	return b.wssLn.Address()
}

// webSocketsAccepting returns the error a WebSocket listener meets
// accepting connections, or nil.
func (b *Broker) webSocketsAccepting() error {
	for _, l := range []*listeners.WebSocket{b.wsLn, b.wssLn} {
		if l == nil {
			continue
		}
		if err := l.Failing(); err != nil {
			return fmt.Errorf("the MQTT WebSocket listener %s is not accepting connections: %w", l.Address(), err)
		}
	}
	return nil
}

// admitWebSocket decides whether a WebSocket upgrade may become an MQTT
// connection, by what a browser tells of the page that opens it. A
// client that is not a browser sends no Origin and is admitted: its
// CONNECT is checked as any other's.
//
// A browser, though, lets any page it shows open a WebSocket to any
// address, the server's loopback address included, and a page of
// another site must not use the visitor's position (on the server's
// machine, on its network) to reach the store. So a page is admitted
// when it comes from the host it connects to (any port: the console on
// the HTTP listener's), or from an origin of Config.WSOrigins. Without
// authentication, when the listener admits anyone who reaches it, more
// is needed: the request must name a loopback host (a site whose name
// it rebinds to 127.0.0.1 names its own), and the page come from a
// loopback host or from WSOrigins.
func (b *Broker) admitWebSocket(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if b.cfg.Auth == nil {
		if !loopbackHost(hostOf(r.Host)) {
			return fmt.Errorf("this server has no authentication: its WebSocket listener serves this machine only; connect to localhost, 127.0.0.1 or [::1], not %q", r.Host)
		}
		if origin == "" || b.originListed(origin) {
			return nil
		}
		if u, err := url.Parse(origin); err == nil && loopbackHost(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("this server has no authentication: a page from %s may not connect to it (only pages of this machine, or of --ws-origins)", origin)
	}
	if origin == "" || b.originListed(origin) {
		return nil
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Hostname(), hostOf(r.Host)) {
		return nil
	}
	return fmt.Errorf("a page from %s may not connect here: its origin is not this server's host nor one of --ws-origins", origin)
}

// originListed reports whether origin matches one of Config.WSOrigins,
// ignoring case.
func (b *Broker) originListed(origin string) bool {
	origin = strings.ToLower(origin)
	for _, p := range b.cfg.WSOrigins {
		if ok, err := path.Match(strings.ToLower(p), origin); err == nil && ok {
			return true
		}
	}
	return false
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

// ValidateWSOrigins reports an origin pattern that cannot match.
func ValidateWSOrigins(origins []string) error {
	for _, p := range origins {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("WebSocket origin %q: %w", p, err)
		}
		if p != "*" && p != "null" && !strings.Contains(p, "://") {
			return fmt.Errorf("WebSocket origin %q: give the scheme too, as browsers send it (https://app.example.com)", p)
		}
	}
	return nil
}
