package attach

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/dssio/dss/internal/wire"
)

// Config configures an Attacher.
type Config struct {
	// Broker is the URL of the MQTT 5 broker: mqtt://HOST:PORT, or
	// mqtts://HOST:PORT for TLS. Required.
	Broker string
	// TLS configures a TLS connection (mqtts://); nil means the system's
	// roots and no client certificate.
	TLS *tls.Config
	// Username and Password log dss in to the broker; empty means none.
	Username string
	Password []byte
	// ClientID is dss's own client id at the broker; several instances
	// attached to one broker need different ones. Required.
	ClientID string
	// Group is the shared subscription group of the request topic:
	// instances of one group share the requests. Default "dss".
	Group string
	// SessionExpiry is how long the broker keeps dss's session (its
	// subscription and the requests sent to it) while dss is not
	// connected. Default one minute.
	SessionExpiry time.Duration
	// KeepAlive is the MQTT keep alive. Default 30 seconds.
	KeepAlive time.Duration
	// ReconnectMin and ReconnectMax bound the pause between connection
	// attempts, which doubles from the first to the second. Defaults
	// 250 ms and 10 s.
	ReconnectMin, ReconnectMax time.Duration
	// MaxKeySize and MaxValueSize bound a request's key and value, in
	// bytes. Required (the server passes its limits).
	MaxKeySize, MaxValueSize int
	// MaxWatchesPerClient bounds the KEYNOTIFY registrations of one
	// client id; 0 means no bound.
	MaxWatchesPerClient int
	// Presence is where dss learns that a client left (PresenceNone,
	// PresenceMosquitto, PresenceEMQX).
	Presence Presence
	// Lease is how long a KEYNOTIFY registration lasts unless the client
	// registers again. Zero means DefaultLease, or DefaultPresenceLease
	// with a Presence; a negative value means for ever, which needs a
	// Presence.
	Lease time.Duration
	// RetryWindow is how long the result of a request is remembered, so
	// that the same request sent again (the broker's QoS 1 redelivery, or
	// a client's retry with the same correlation data) is not carried out
	// twice. Default two minutes.
	RetryWindow time.Duration
	// MaxQueuedBytes bounds the responses and notifications waiting to be
	// sent to the broker (while dss is not connected, most of all); past
	// it, new ones are dropped and counted. 0 means
	// DefaultMaxQueuedBytes, a negative number no bound.
	MaxQueuedBytes int64
	// Logger receives the log lines; nil means slog.Default().
	Logger *slog.Logger
	// Metrics counts what the attacher does; nil means unexported
	// metrics.
	Metrics *Metrics
}

// Defaults of Config.
const (
	DefaultGroup         = "dss"
	DefaultSessionExpiry = time.Minute
	DefaultKeepAlive     = 30 * time.Second
	// DefaultLease bounds how long a client that left keeps receiving
	// notifications when the broker does not say when clients leave.
	DefaultLease = 10 * time.Minute
	// DefaultPresenceLease bounds the same for the clients whose leaving
	// dss did not hear of (it was not connected to the broker then).
	DefaultPresenceLease = 24 * time.Hour
	DefaultRetryWindow   = 2 * time.Minute
	// DefaultMaxQueuedBytes holds a few seconds of responses at full
	// speed, or eight of the largest values.
	DefaultMaxQueuedBytes = 256 << 20
)

// Presence names the source of the news that a client left.
type Presence int

const (
	// PresenceNone: the broker says nothing; registrations last their
	// lease.
	PresenceNone Presence = iota
	// PresenceMosquitto: Mosquitto's log on $SYS/broker/log/N
	// (log_dest topic), which names every client that connects or
	// disconnects.
	PresenceMosquitto
	// PresenceEMQX: EMQX's $SYS/brokers/+/clients/+/connected and
	// .../disconnected events.
	PresenceEMQX
)

func (p Presence) String() string {
	switch p {
	case PresenceMosquitto:
		return "mosquitto"
	case PresenceEMQX:
		return "emqx"
	}
	return "none"
}

// ParsePresence reads "none", "mosquitto" or "emqx".
func ParsePresence(s string) (Presence, error) {
	for _, p := range []Presence{PresenceNone, PresenceMosquitto, PresenceEMQX} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown presence %q: want none, mosquitto or emqx", s)
}

// BrokerURL parses and checks the URL of a broker. The schemes are mqtt
// (or tcp) and mqtts (or ssl, tls); the port defaults to 1883 and 8883.
func BrokerURL(s string) (*url.URL, error) {
	const want = "want mqtt://HOST:PORT or mqtts://HOST:PORT"
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("broker URL %q: %s", s, want)
	}
	var port string
	switch strings.ToLower(u.Scheme) {
	case "mqtt", "tcp":
		u.Scheme, port = "mqtt", "1883"
	case "mqtts", "ssl", "tls":
		u.Scheme, port = "mqtts", "8883"
	default:
		return nil, fmt.Errorf("broker URL %q: unknown scheme %q: %s", s, u.Scheme, want)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("broker URL %q: %s (user names and passwords go in --username and --password)", s, want)
	}
	if u.Port() == "" {
		u.Host += ":" + port
	}
	return u, nil
}

func (c *Config) setDefaults() error {
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.SessionExpiry == 0 {
		c.SessionExpiry = DefaultSessionExpiry
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.ReconnectMin == 0 {
		c.ReconnectMin = 250 * time.Millisecond
	}
	if c.ReconnectMax == 0 {
		c.ReconnectMax = 10 * time.Second
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
		if c.Presence != PresenceNone {
			c.Lease = DefaultPresenceLease
		}
	}
	if c.RetryWindow == 0 {
		c.RetryWindow = DefaultRetryWindow
	}
	switch {
	case c.MaxQueuedBytes == 0:
		c.MaxQueuedBytes = DefaultMaxQueuedBytes
	case c.MaxQueuedBytes < 0:
		c.MaxQueuedBytes = 0 // no bound
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	return c.Validate()
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	if _, err := BrokerURL(c.Broker); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	switch {
	case c.ClientID == "":
		return errors.New("attach: dss needs a client id at the broker")
	case strings.ContainsAny(c.Group, "/+#") || c.Group == "":
		return fmt.Errorf("attach: shared subscription group %q: want a name without '/', '+' or '#'", c.Group)
	case c.SessionExpiry < 0 || c.SessionExpiry > 0xFFFFFFFE*time.Second:
		return errors.New("attach: the session expiry may not be negative")
	case c.KeepAlive < time.Second || c.KeepAlive > 65535*time.Second:
		return errors.New("attach: the keep alive must be 1s to 18h12m15s")
	case c.Lease < 0 && c.Presence == PresenceNone:
		return errors.New("attach: KEYNOTIFY registrations without a lease need the broker to say when clients leave (a presence source): otherwise a client that left would be notified for ever")
	case c.MaxKeySize <= 0 || c.MaxValueSize <= 0:
		return errors.New("attach: the maximum key and value sizes must be above 0")
	case c.RetryWindow < 0:
		return errors.New("attach: the retry window may not be negative")
	}
	return nil
}

// requestFilter is the shared subscription of the request topic.
func (c *Config) requestFilter() string {
	return "$share/" + c.Group + "/" + wire.RequestTopic
}
