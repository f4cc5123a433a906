package bench

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Mode is what a run does.
type Mode uint8

// The modes of a run.
const (
	// ModeRequests drives closed-loop requests (set, get, mix, del, vdel).
	ModeRequests Mode = iota
	// ModeKeyNotify measures how long one SET takes to reach every
	// watcher of the key.
	ModeKeyNotify
	// ModeFill stores every key of the key space once and stops.
	ModeFill
	// ModeIdle connects the clients and holds the connections open.
	ModeIdle
	// ModeWatch measures how long a SET takes to reach the one watcher
	// of its key, with every watcher registered for a key (or a pattern)
	// of its own and writers keeping SETs in flight.
	ModeWatch
	// ModePubSub measures ordinary MQTT messages from publishers to
	// subscribers, on one server or across the nodes of a cluster.
	ModePubSub
)

// Workload is the parsed --op: a mode and, for ModeRequests, the verbs.
type Workload struct {
	Mode Mode
	// Verb is the verb of set, get, del and vdel.
	Verb string
	// GetRatio is the share of GETs of a mix; the rest are SETs.
	GetRatio float64
	// Mix is set for mix:R.
	Mix bool
	// Pattern makes the watchers of keynotify:pattern and watch:pattern
	// register with KEYNOTIFY pattern PATTERN (dss's extension) instead
	// of for the key itself.
	Pattern bool
	text    string
}

func (w Workload) String() string { return w.text }

// ParseWorkload parses an --op value: set, get, del, vdel, mix:R (R the
// share of GETs, the rest SETs), keynotify, keynotify:pattern, watch,
// watch:pattern, pubsub, fill or idle.
func ParseWorkload(s string) (Workload, error) {
	w := Workload{text: s}
	switch name, arg, hasArg := strings.Cut(strings.ToLower(s), ":"); {
	case (name == "keynotify" || name == "watch") && hasArg:
		if arg != "pattern" {
			return w, fmt.Errorf("--op %q: want %s or %s:pattern", s, name, name)
		}
		w.Mode, w.Pattern = ModeKeyNotify, true
		if name == "watch" {
			w.Mode = ModeWatch
		}
	case name == "mix":
		if !hasArg {
			return w, fmt.Errorf("--op %q: want mix:R with R the share of GETs, e.g. mix:0.8", s)
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return w, fmt.Errorf("--op %q: the GET share must be a number from 0 to 1", s)
		}
		w.Mix, w.GetRatio = true, r
	case hasArg:
		return w, fmt.Errorf("--op %q: only mix, keynotify and watch take an argument", s)
	case name == "set", name == "get", name == "del", name == "vdel":
		w.Verb = name
	case name == "keynotify":
		w.Mode = ModeKeyNotify
	case name == "watch":
		w.Mode = ModeWatch
	case name == "fill":
		w.Mode = ModeFill
	case name == "idle":
		w.Mode = ModeIdle
	case name == "pubsub":
		w.Mode = ModePubSub
	default:
		return w, fmt.Errorf("--op %q: want set, get, mix:R, del, vdel, keynotify[:pattern], watch[:pattern], pubsub, fill or idle", s)
	}
	return w, nil
}

// Config configures a run. The zero value of a field means its default.
type Config struct {
	// Server is the MQTT address, HOST:PORT. Default localhost:1883.
	Server string
	// Clients is the number of connections (in watch mode, of writers).
	// Default 64.
	Clients int
	// Inflight is the number of outstanding requests per connection.
	// Default 1.
	Inflight int
	// Duration is the measured window. Default 10s.
	Duration time.Duration
	// Warmup runs before the measured window and is not measured. Default
	// 2s; negative means none.
	Warmup time.Duration
	// Requests, when not 0, ends the run after this many requests (in
	// keynotify mode, notifications) instead of after Duration; the whole
	// run is measured then.
	Requests int64
	// Workload is what to send. Default set.
	Workload Workload
	// Keys is the size of the key space. Default 10,000.
	Keys int
	// KeyPrefix starts every key. Default "bench:".
	KeyPrefix string
	// ValueSize is the size of every value. Default 100; at least 8 in
	// keynotify and watch modes, whose values carry a sequence number or
	// the time of the SET.
	ValueSize int
	// PX gives every SET a time to live; 0 means none.
	PX time.Duration
	// Watchers is the number of watching connections of keynotify and
	// watch modes. Default 1000.
	Watchers int
	// Subscribers is the number of subscribing connections of pubsub
	// mode, each of which receives every message; QoS is the QoS of its
	// publishes and subscriptions. Default 1 and 0.
	Subscribers int
	QoS         byte
	// SubServer is where the subscribers of pubsub mode connect (another
	// node of a cluster); default Server. SubServerPID, when not 0 and
	// another process than ServerPID, is the subscribers' server, whose
	// CPU time per message the report includes.
	SubServer    string
	SubServerPID int
	// Timeout is how long a request (or, in keynotify mode, a notification)
	// may take before it counts as timed out. Default 5s.
	Timeout time.Duration
	// ConnectTimeout bounds connecting one client: TCP, TLS, CONNECT and
	// CONNACK, SUBSCRIBE and SUBACK. It also bounds a write the server
	// does not take, when longer than Timeout. Default 10s.
	ConnectTimeout time.Duration
	// Preload stores every key before a get, mix, del or vdel run so that
	// reads hit. Nil means: yes for those workloads.
	Preload *bool
	// ResponseQoS0 subscribes to responses with QoS 0 instead of QoS 1
	// (which the vendor's clients use), to see what the acknowledgements
	// of responses cost the server.
	ResponseQoS0 bool
	// ServerPID, when not 0, is the process whose CPU time and resident
	// memory the report includes.
	ServerPID int
	// ClientID starts the MQTT client id of every connection. Default
	// "bench-<pid>".
	ClientID string
	// Username and Password are sent in every CONNECT when set.
	Username string
	Password []byte
	// TLS, when set, makes every connection speak TLS with it.
	TLS *tls.Config

	// keepAlive is the Keep Alive of every CONNECT, in seconds; 0, none
	// (a connection may be idle for a whole run). Idle mode sets it.
	keepAlive uint16
}

func (c *Config) setDefaults() error {
	if c.Server == "" {
		c.Server = "localhost:1883"
	}
	if c.Clients == 0 {
		c.Clients = 64
	}
	if c.Inflight == 0 {
		c.Inflight = 1
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Warmup == 0 {
		c.Warmup = 2 * time.Second
	}
	if c.Warmup < 0 {
		c.Warmup = 0
	}
	if c.Workload.text == "" {
		c.Workload = Workload{Verb: "set", text: "set"}
	}
	if c.Keys == 0 {
		c.Keys = 10000
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = "bench:"
	}
	if c.ValueSize == 0 {
		c.ValueSize = 100
	}
	if c.Watchers == 0 {
		c.Watchers = 1000
	}
	if c.Subscribers == 0 {
		c.Subscribers = 1
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	return c.Validate()
}

// maxInflight bounds the outstanding requests of a connection: the packet
// identifiers of one connection's unacknowledged requests must differ.
const maxInflight = 65535

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.Clients < 0:
		return errors.New("bench: --clients must be positive")
	case c.Inflight < 0 || c.Inflight > maxInflight:
		return fmt.Errorf("bench: --inflight must be from 1 to %d", maxInflight)
	case c.Requests < 0:
		return errors.New("bench: --requests may not be negative")
	case c.Duration < 0:
		return errors.New("bench: --duration may not be negative")
	case c.Keys < 0:
		return errors.New("bench: --keys must be positive")
	case c.ValueSize < 0:
		return errors.New("bench: --value-size may not be negative")
	case c.Workload.Mode == ModeKeyNotify && c.ValueSize < 8:
		return errors.New("bench: keynotify values carry an 8-byte sequence number: --value-size must be at least 8")
	case c.Workload.Pattern && !utf8.ValidString(c.KeyPrefix):
		return errors.New("bench: a pattern matches only UTF-8 keys: --key-prefix must be valid UTF-8")
	case c.Workload.Mode == ModeWatch && c.ValueSize < 8:
		return errors.New("bench: watch values carry the 8-byte time of their SET: --value-size must be at least 8")
	case c.Watchers < 0:
		return errors.New("bench: --watchers must be positive")
	case c.Subscribers < 0:
		return errors.New("bench: --subscribers must be positive")
	case c.QoS > 2:
		return errors.New("bench: --qos must be 0, 1 or 2")
	case c.QoS == 2 && c.Workload.Mode == ModePubSub:
		return errors.New("bench: pubsub measures QoS 0 and 1")
	case c.Workload.Mode == ModePubSub && c.ValueSize < pubsubHeader:
		return fmt.Errorf("bench: pubsub payloads carry a %d-byte header: --value-size must be at least %d", pubsubHeader, pubsubHeader)
	case c.Timeout < 0:
		return errors.New("bench: --timeout may not be negative")
	case c.ConnectTimeout < 0:
		return errors.New("bench: --connect-timeout may not be negative")
	case c.PX < 0 || (c.PX > 0 && c.PX < time.Millisecond):
		return errors.New("bench: --px must be at least 1ms")
	}
	return nil
}

// preload reports whether the run stores every key first.
func (c *Config) preload() bool {
	if c.Preload != nil {
		return *c.Preload
	}
	w := c.Workload
	return w.Mode == ModeRequests && (w.Mix || w.Verb != "set")
}
