package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/dssio/dss/internal/attach"
	"github.com/dssio/dss/internal/broker"
	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/journal"
)

// Config configures a Server. The zero value serves MQTT on
// 127.0.0.1:1883 with the defaults below.
type Config struct {
	// Listen is the MQTT listener address. Default "127.0.0.1:1883":
	// loopback only while no authentication is configured.
	Listen string
	// AllowAnonymous lets clients connect without authentication on a
	// listener beyond loopback; without it such a listener is refused.
	// With authentication configured, it admits clients that present no
	// credentials, as the principal "anonymous".
	AllowAnonymous bool
	// Listener, when set, is served for MQTT instead of a listener on
	// Listen: a socket handed over by a supervisor, or a test's.
	Listener net.Listener
	// Users is the users file (names and argon2id hashes, written by dss
	// passwd); empty means no password logins.
	Users string
	// Policy is the authorization policy file (YAML, see auth.Policy);
	// empty grants authenticated clients everything isolation allows. It
	// needs authentication (Users or TLSClientCA).
	Policy string
	// TLSCert and TLSKey are the PEM files of the TLS listener's
	// certificate chain and key; with them the server listens with TLS
	// on TLSListen as well. TLSClientCA is the PEM file of the CAs that
	// sign client certificates: clients may then log in with one.
	TLSCert, TLSKey, TLSClientCA string
	// TLSListen is the TLS listener address. Default ":8883" once
	// authentication is configured, "127.0.0.1:8883" before.
	TLSListen string
	// WSListen is the address of the MQTT over WebSocket listener; empty
	// turns it off. WSSListen is that of the listener of WebSockets over
	// TLS, with the certificate of TLSCert; empty turns it off. Both
	// follow the rules of Listen: beyond loopback only with
	// authentication (or AllowAnonymous).
	WSListen, WSSListen string
	// WSOrigins lists the origins (scheme://host[:port], path.Match
	// patterns) of the web pages that may open WebSocket connections,
	// beyond pages of the host the client connects to.
	WSOrigins []string
	// ReloadInterval is how often the users, policy and certificate
	// files are checked for changes (Reload reads them at any time).
	// Zero means 2 s; negative, never.
	ReloadInterval time.Duration
	// LoginDelay is the delay of the answer to a failed login, doubling
	// for each failure in a row from the same address. Zero means
	// 100 ms.
	LoginDelay time.Duration
	// HTTPListen is the address of the metrics and health endpoint;
	// empty turns it off.
	HTTPListen string
	// HTTPIdleTimeout is how long a connection to the HTTP endpoint may
	// stay idle between requests before it is closed; HTTPMaxConnections
	// bounds its connections (at the bound, a new one takes the place of
	// the connection idle the longest, or waits for one to end). 0 means
	// DefaultHTTPIdleTimeout and DefaultHTTPMaxConnections.
	HTTPIdleTimeout    time.Duration
	HTTPMaxConnections int
	// AdminToken, when set, is the secret that a backup request on the
	// HTTP endpoint must carry (Authorization: Bearer); without it only
	// clients on this machine may fetch a backup.
	AdminToken string
	// Pprof serves the Go profiler under /debug/pprof/ on the HTTP
	// endpoint.
	Pprof bool
	// NodeID is stamped on every version this node issues. Default: the
	// host name.
	NodeID string
	// MaxClockSkew is how far ahead of this node's clock a request's
	// timestamp or fencing token may be. Default one minute.
	MaxClockSkew time.Duration
	// MaxPacketSize bounds inbound MQTT packets. 0 means
	// DefaultMaxPacketSize.
	MaxPacketSize uint32
	// Capabilities are the MQTT 5 capabilities announced in CONNACK and
	// enforced (keep alive cap, maximum QoS, retained messages, wildcard
	// and shared subscriptions, topic aliases, receive maximum); nil
	// means broker.DefaultCapabilities.
	Capabilities *broker.Capabilities
	// ReadLoops is the number of read loops that serve busy connections
	// instead of a goroutine woken per request, and hold idle ones with
	// no goroutine of their own (Linux): 0 means one per CPU the process
	// may use, a negative number none.
	ReadLoops int
	// ConnectTimeout bounds the time a new connection has to send its
	// whole CONNECT. Default 10 seconds.
	ConnectTimeout time.Duration
	// PacketReadTimeout bounds the time between the bytes of a packet
	// once its first byte came: a connection whose packet stops
	// arriving for that long is closed, whatever its keep alive.
	// Default broker.DefaultPacketReadTimeout (a minute).
	PacketReadTimeout time.Duration
	// MaxKeys bounds the number of stored keys (a SET of a new key past
	// it is answered "the quota has been exceeded"). 0 means
	// DefaultMaxKeys, a negative number no bound.
	MaxKeys int
	// MaxStoreBytes bounds the total length of the stored keys and
	// values. 0 means a quarter of the machine's memory, a negative
	// number no bound.
	MaxStoreBytes int64
	// MaxKeySize and MaxValueSize bound a request's key and value, in
	// bytes. 0 means 16 KiB and 32 MiB.
	MaxKeySize, MaxValueSize int
	// MaxWatchesPerClient bounds the KEYNOTIFY registrations of one
	// connection. 0 means DefaultMaxWatchesPerClient, a negative number
	// no bound.
	MaxWatchesPerClient int
	// MaxSubscriptionsPerClient bounds the topic filters of one client's
	// session. 0 means DefaultMaxSubscriptionsPerClient, a negative
	// number no bound.
	MaxSubscriptionsPerClient int
	// MaxTopicLevels and MaxTopicLength bound the levels and bytes of the
	// topic names and filters clients send; past them a filter is
	// refused with SUBACK or UNSUBACK 0x8F, a publish with PUBACK 0x90,
	// a Will with CONNACK 0x90. 0 means DefaultMaxTopicLevels and
	// DefaultMaxTopicLength, a negative number no bound.
	MaxTopicLevels, MaxTopicLength int
	// MaxRetained and MaxRetainedBytes bound the number and memory of the
	// retained messages; a client's message to retain past them is
	// refused with PUBACK 0x97 (a QoS 0 one is dropped). 0 means
	// DefaultMaxRetained and a sixteenth of the machine's memory, a
	// negative number no bound.
	MaxRetained      int
	MaxRetainedBytes int64
	// MaxInflightPerClient bounds the unanswered requests of one
	// connection; past it the connection is not read until one is
	// answered. 0 means 256, a negative number no bound.
	MaxInflightPerClient int
	// MaxSessionQueueBytes bounds the memory of the messages queued for
	// one session without a connection, MaxQueuedBytes that of all of
	// them: past a bound, the oldest messages never sent of the session
	// being fed are dropped. 0 means DefaultMaxSessionQueueBytes and a
	// sixteenth of the machine's memory, a negative number no bound.
	MaxSessionQueueBytes, MaxQueuedBytes int64

	// DataDir is where the state is kept across restarts; empty keeps
	// everything in memory only.
	DataDir string
	// Fsync is when changes are forced to stable storage. Default
	// journal.FsyncAlways.
	Fsync journal.Fsync
	// Persistence says which keys survive a restart: PersistAll (the
	// default) or PersistFlagged, where only keys written with the user
	// property aio-persistence=true do.
	Persistence Persistence
	// SnapshotAfter is how many bytes of journal make a snapshot due, at
	// least. Zero means 64 MiB.
	SnapshotAfter int64
	// Logger receives the log lines. Default slog.Default().
	Logger *slog.Logger
	// Now is the physical clock; nil means time.Now. Tests move it.
	Now func() time.Time
	// Attach, when set, serves the store to the clients of another MQTT
	// broker as one of its clients (dss attach) instead of running dss's
	// own broker: the settings of the MQTT listeners and of
	// authentication do not apply.
	Attach *attach.Config
	// Cluster, when its Listen is set, makes this node a member of a
	// Raft cluster (see docs/cluster.md): writes are replicated before
	// they are applied, and the state is kept in DataDir/raft instead of
	// the journal.
	Cluster ClusterConfig
}

// Persistence says which keys survive a restart.
type Persistence int

const (
	// PersistAll keeps every key.
	PersistAll Persistence = iota
	// PersistFlagged keeps only keys written with aio-persistence=true,
	// as the vendor's service does; the others live in memory only.
	PersistFlagged
)

func (p Persistence) String() string {
	if p == PersistFlagged {
		return "flagged"
	}
	return "all"
}

// ParsePersistence reads "all" or "flagged".
func ParsePersistence(s string) (Persistence, error) {
	switch s {
	case "all":
		return PersistAll, nil
	case "flagged":
		return PersistFlagged, nil
	}
	return 0, fmt.Errorf("unknown persistence %q: want all or flagged", s)
}

// ClusterConfig configures a cluster node; the zero value is a single node.
type ClusterConfig struct {
	// Listen is the cluster listener (HOST:PORT), for Raft and for the
	// requests the other nodes forward.
	Listen string
	// Peers are the initial members, the same list on every node.
	Peers []cluster.Peer
	// Secret authenticates and encrypts the cluster connections; required
	// unless Listen is a loopback address.
	Secret []byte
	// RelayBuffer bounds the bytes of messages kept for one other node
	// that does not acknowledge them; zero means cluster's default.
	RelayBuffer int64
	// Tuning, for tests; zero values take cluster.Config's defaults.
	HeartbeatTimeout  time.Duration
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
}

func (c *Config) setDefaults() error {
	if c.Listen == "" {
		c.Listen = c.DefaultListen()
	}
	if c.TLSListen == "" && c.TLSCert != "" {
		c.TLSListen = c.DefaultTLSListen()
	}
	if c.ReloadInterval == 0 {
		c.ReloadInterval = 2 * time.Second
	}
	if c.NodeID == "" {
		c.NodeID = DefaultNodeID()
	}
	if c.MaxClockSkew == 0 {
		c.MaxClockSkew = time.Minute
	}
	if c.MaxPacketSize == 0 {
		c.MaxPacketSize = DefaultMaxPacketSize
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	if c.MaxStoreBytes == 0 {
		c.MaxStoreBytes = defaultMaxStoreBytes()
	}
	if c.MaxWatchesPerClient == 0 {
		c.MaxWatchesPerClient = DefaultMaxWatchesPerClient
	}
	if c.MaxSubscriptionsPerClient == 0 {
		c.MaxSubscriptionsPerClient = DefaultMaxSubscriptionsPerClient
	}
	if c.HTTPIdleTimeout == 0 {
		c.HTTPIdleTimeout = DefaultHTTPIdleTimeout
	}
	if c.HTTPMaxConnections == 0 {
		c.HTTPMaxConnections = DefaultHTTPMaxConnections
	}
	if c.MaxRetained == 0 {
		c.MaxRetained = DefaultMaxRetained
	}
	if c.MaxRetainedBytes == 0 {
		c.MaxRetainedBytes = defaultMaxRetainedBytes()
	}
	if c.MaxTopicLevels == 0 {
		c.MaxTopicLevels = DefaultMaxTopicLevels
	}
	if c.MaxTopicLength == 0 {
		c.MaxTopicLength = DefaultMaxTopicLength
	}
	if c.MaxSessionQueueBytes == 0 {
		c.MaxSessionQueueBytes = DefaultMaxSessionQueueBytes
	}
	if c.MaxQueuedBytes == 0 {
		c.MaxQueuedBytes = defaultMaxQueuedBytes()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	// Much of what is logged comes from clients: no string of a line
	// is longer than maxLoggedString.
	c.Logger = truncatingLogger(c.Logger)
	return c.Validate()
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	if strings.ContainsRune(c.NodeID, ':') {
		return errors.New("server: the node id may not contain ':', which separates the parts of a version")
	}
	if c.MaxKeySize < 0 || c.MaxValueSize < 0 {
		return errors.New("server: the maximum key and value sizes may not be negative")
	}
	if c.ConnectTimeout < 0 {
		return errors.New("server: the connect timeout may not be negative")
	}
	if c.HTTPIdleTimeout < 0 || c.HTTPMaxConnections < 0 {
		return errors.New("server: the HTTP idle timeout and connection bound may not be negative")
	}
	if c.PacketReadTimeout < 0 {
		return errors.New("server: the packet read timeout may not be negative")
	}
	if c.MaxClockSkew < 0 {
		return errors.New("server: the maximum clock skew may not be negative")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("server: TLS needs both a certificate (--tls-cert) and its key (--tls-key)")
	}
	if c.Policy != "" && !c.Authenticates() {
		return errors.New("server: a policy (--policy) names principals, which only authentication establishes: configure users (--users) or client certificates (--tls-client-ca)")
	}
	if c.WSSListen != "" && c.TLSCert == "" {
		return errors.New("server: a WebSocket listener over TLS (--wss-listen) needs the server's certificate and key (--tls-cert, --tls-key)")
	}
	if err := broker.ValidateWSOrigins(c.WSOrigins); err != nil {
		return fmt.Errorf("server: --ws-origins: %w", err)
	}
	if c.TLSCert == "" && (c.TLSListen != "" || c.TLSClientCA != "") {
		return errors.New("server: a TLS listener (--tls-listen) and client certificates (--tls-client-ca) need the server's certificate and key (--tls-cert, --tls-key)")
	}
	if c.AdminToken != "" && len(c.AdminToken) < 16 {
		return ErrAdminToken
	}
	if c.Cluster.Listen != "" {
		if c.DataDir == "" {
			return errors.New("server: a cluster node keeps its Raft log on disk: give a data directory (--data), not --in-memory")
		}
		if c.Persistence == PersistFlagged {
			return errors.New("server: --persistence flagged is for a single node; every key of a cluster is replicated and kept")
		}
	}
	return nil
}

// DefaultNodeID is the node id used when NodeID is empty: the host name,
// with ':' (which separates the parts of a version) as '-'.
func DefaultNodeID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "dss"
	}
	return strings.ReplaceAll(h, ":", "-")
}
