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
func (c *Config) DefaultListen() string {
	return "127.0.0.1:1883"
}

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
	if isLoopback(addr) {
		return nil
	}
	if !c.AllowAnonymous {
		return fmt.Errorf("%w: the %s on %s is reachable beyond this machine and no authentication is configured: configure users (--users) or client certificates (--tls-client-ca), listen on loopback (127.0.0.1), or allow anonymous clients explicitly (--allow-anonymous)", ErrExposed, what, addr)
	}
	log.Warn("anonymous clients allowed beyond loopback: anyone who can reach this address can read and change every key", "listener", addr)
	return nil
}
