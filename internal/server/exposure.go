package server

import (
	"fmt"
	"log/slog"
	"net"
)

// DefaultListen returns the MQTT listener address used when Listen is
// empty: loopback only while no authentication is configured, as
// Mosquitto 2 does, so that a server started without thinking about
// security is not open to the network.
// Once authentication is configured it is ":1883", every interface, or
// still loopback when TLS is configured, so that passwords do not cross
// the network in clear text unless asked for.
func (c *Config) DefaultListen() string {
	if c.Authenticates() && c.TLSCert == "" {
		return ":1883"
	}
	return "127.0.0.1:1883"
}

// DefaultTLSListen returns the TLS listener address used when TLSListen
// is empty and TLS is configured: every interface once authentication is
// configured, loopback before.
func (c *Config) DefaultTLSListen() string {
	if c.Authenticates() {
		return ":8883"
	}
	return "127.0.0.1:8883"
}

// Authenticates reports whether clients must authenticate: a users file
// or client certificates are configured.
func (c *Config) Authenticates() bool { return c.Users != "" || c.TLSClientCA != "" }

// ErrExposed is returned by New for a listener beyond loopback that
// would admit anyone.
var ErrExposed = fmt.Errorf("server: a listener beyond loopback needs authentication")

// isLoopback reports whether addr, a bound listener's address, is
// reachable from this machine only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkExposure refuses a listener bound beyond loopback that admits
// clients without authentication, unless anonymous clients are allowed
// explicitly; then it warns.
func (c *Config) checkExposure(what, addr string, log *slog.Logger) error {
	if isLoopback(addr) || c.Authenticates() {
		return nil
	}
	if !c.AllowAnonymous {
		return fmt.Errorf("%w: the %s on %s is reachable beyond this machine and no authentication is configured: configure users (--users) or client certificates (--tls-client-ca), listen on loopback (127.0.0.1), or allow anonymous clients explicitly (--allow-anonymous)", ErrExposed, what, addr)
	}
	log.Warn("anonymous clients allowed beyond loopback: anyone who can reach this address can read and change every key", "listener", addr)
	return nil
}

// checkListeners checks the bound listeners: none beyond loopback admits
// anyone without authentication, and a warning where passwords would
// cross the network in clear text.
func (c *Config) checkListeners(plain, tls, ws, wss string, log *slog.Logger) error {
	if err := c.checkExposure("MQTT listener", plain, log); err != nil {
		return err
	}
	for _, l := range []struct{ what, addr string }{{"TLS listener", tls}, {"WebSocket listener", ws}, {"WebSocket listener over TLS", wss}} {
		if l.addr == "" {
			continue
		}
		if err := c.checkExposure(l.what, l.addr, log); err != nil {
			return err
		}
	}
	if c.Users != "" && !isLoopback(plain) {
		log.Warn("passwords cross the network in clear text on the plain MQTT listener; configure TLS (--tls-cert, --tls-key) and keep --listen on loopback", "listener", plain)
	}
	if c.Users != "" && ws != "" && !isLoopback(ws) {
		log.Warn("passwords cross the network in clear text on the plain WebSocket listener; serve WebSockets over TLS (--wss-listen) and keep --ws-listen on loopback", "listener", ws)
	}
	return nil
}
