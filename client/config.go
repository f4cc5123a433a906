package client

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/dssio/dss/hlc"
)

// DefaultPort is the port of a server address given without one;
// DefaultTLSPort with TLS.
const (
	DefaultPort    = "1883"
	DefaultTLSPort = "8883"
)

// Config configures a Client. Only Servers is required; every other field
// has a working default.
type Config struct {
	// Servers lists the servers, each "host:port", "host" (port 1883, or
	// 8883 with TLS) or "mqtt://host:port" ("tcp://" works too;
	// "mqtts://", "ssl://" and "tls://" ask for TLS). The client connects
	// to the first one that answers. When a connection drops it tries the
	// next server in the list, wrapping around, and waits between rounds.
	Servers []string
	// TLS, when set, makes every connection speak TLS with it (a server
	// address with a TLS scheme uses the system's roots when it is nil).
	// LoadTLS makes one from PEM files.
	TLS *tls.Config
	// ClientID is the MQTT client id. Default: "dss-" and 16 random hex
	// digits. Two clients must not share an id: the server drops the older
	// connection, and with it its watches.
	ClientID string
	// Username and Password are sent in the MQTT CONNECT when set: a
	// server with a users file checks them.
	Username string
	Password []byte
	// KeepAlive is the MQTT keep alive interval the client asks for: the
	// server drops the connection after one and a half times it without a
	// packet from the client. Default 30 s.
	KeepAlive time.Duration
	// PingTimeout bounds how long a server that stopped answering (a hung
	// process, a machine gone without closing its connections) goes
	// unnoticed: after PingTimeout without a packet from the server the
	// client sends a PINGREQ, and when nothing comes within another
	// PingTimeout it drops the connection and reconnects, to the next
	// server of the list, and its watches resync. A dead connection is so
	// noticed within about twice PingTimeout. Default 5 s.
	PingTimeout time.Duration
	// ConnectTimeout bounds one connection attempt to one server.
	// Default 5 s.
	ConnectTimeout time.Duration
	// MinBackoff is the wait after the first round of failed connection
	// attempts; it doubles each round up to MaxBackoff, with jitter.
	// Defaults 100 ms and 5 s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// DialRounds makes Dial give up after that many rounds in which every
	// server of the list refused or failed the connection, rather than
	// keep trying until its context ends: a command-line tool fails at
	// once against a server that is down. Zero means Dial keeps trying.
	// Once connected, the client reconnects after a loss however many
	// rounds that takes.
	DialRounds int
	// ResyncTimeout bounds each request that re-registers a watch after a
	// reconnect. Default 10 s.
	ResyncTimeout time.Duration
	// WatchRenewal is how often the keys and patterns watched are
	// registered again (KEYNOTIFY) while the connection lasts, so that a server that ends
	// a registration at the end of a lease (dss attach, whose default
	// lease is 10 minutes) keeps them; a server that keeps registrations
	// for the connection's life answers +OK and changes nothing. Zero
	// means 4 minutes, a negative value never.
	WatchRenewal time.Duration
	// Clock stamps requests (__ts). Default: a clock whose node id is the
	// client id. Versions in responses advance it.
	Clock *hlc.Clock
	// Logger receives the client's log lines (connections, failovers).
	// Default: none.
	Logger *slog.Logger
}

// withDefaults returns a copy of c with every unset field filled in, or
// the first setting that cannot work.
func (c Config) withDefaults() (Config, error) {
	if len(c.Servers) == 0 {
		return c, errors.New("dss client: no server address")
	}
	secure := c.TLS != nil
	for _, s := range c.Servers {
		secure = secure || tlsScheme(s)
	}
	if secure && c.TLS == nil {
		c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	addrs := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		a, err := parseAddr(s, secure)
		if err != nil {
			return c, err
		}
		addrs[i] = a
	}
	c.Servers = addrs
	if c.ClientID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		c.ClientID = "dss-" + hex.EncodeToString(b[:])
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = 30 * time.Second
	}
	if c.KeepAlive < time.Second || c.KeepAlive > 65535*time.Second {
		return c, fmt.Errorf("dss client: keep alive %v: want between 1s and 65535s", c.KeepAlive)
	}
	if c.PingTimeout <= 0 {
		c.PingTimeout = 5 * time.Second
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 5 * time.Second
	}
	c.MaxBackoff = max(c.MaxBackoff, c.MinBackoff)
	if c.WatchRenewal == 0 {
		c.WatchRenewal = 4 * time.Minute
	}
	if c.ResyncTimeout <= 0 {
		c.ResyncTimeout = 10 * time.Second
	}
	if c.Clock == nil {
		// A node id may not hold ':', which separates the parts of a
		// version.
		c.Clock = hlc.NewClock(strings.ReplaceAll(c.ClientID, ":", "-"), nil)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, nil
}

// tlsScheme reports whether a server address asks for TLS.
func tlsScheme(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	switch strings.ToLower(scheme) {
	case "mqtts", "ssl", "tls":
		return ok
	}
	return false
}

// parseAddr turns a server address as users write it into host:port;
// secure says whether TLS is in use, which makes 8883 the default port.
func parseAddr(s string, secure bool) (string, error) {
	addr := s
	if i := strings.Index(s, "://"); i >= 0 {
		switch scheme := strings.ToLower(s[:i]); scheme {
		case "mqtt", "tcp":
			if secure {
				return "", fmt.Errorf("dss client: server %q: plain %s:// in a list of TLS servers", s, scheme)
			}
			addr = strings.TrimSuffix(s[i+3:], "/")
		case "mqtts", "ssl", "tls":
			addr = strings.TrimSuffix(s[i+3:], "/")
		default:
			return "", fmt.Errorf("dss client: server %q: scheme %q not supported (want mqtt://, tcp://, mqtts://, ssl:// or tls://)", s, scheme)
		}
	}
	if addr == "" {
		return "", fmt.Errorf("dss client: empty server address")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		// No port: the whole is a host name or an IP address (an IPv6
		// address may come in brackets).
		host := strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
		if strings.ContainsAny(host, "/[]") || host == "" {
			return "", fmt.Errorf("dss client: server %q: %w", s, err)
		}
		port := DefaultPort
		if secure {
			port = DefaultTLSPort
		}
		addr = net.JoinHostPort(host, port)
	}
	return addr, nil
}

// LoadTLS returns a TLS configuration for Config.TLS from PEM files:
// caFile, when not empty, holds the CAs the server's certificate must be
// signed by (otherwise the system's roots); certFile and keyFile, when
// not empty, are the client certificate and its key, for a server that
// takes client certificates.
func LoadTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("dss client: CA file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("dss client: CA file %s holds no PEM certificate", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("dss client: a client certificate needs both its certificate and its key file")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("dss client: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// ResolveServer returns the HOST:PORT that an entry of Config.Servers
// names, and whether it asks for TLS (mqtts://, ssl:// or tls://);
// withTLS says that TLS is on anyway (Config.TLS), which makes 8883 the
// default port. For tools that connect as the client does.
func ResolveServer(s string, withTLS bool) (addr string, secure bool, err error) {
	secure = withTLS || tlsScheme(s)
	addr, err = parseAddr(s, secure)
	return addr, secure, err
}
