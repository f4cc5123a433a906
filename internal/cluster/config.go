package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/dssio/dss/internal/journal"
)

// Peer is one member of the cluster: its node id and the address of its
// cluster listener.
type Peer struct {
	ID   string
	Addr string
}

// ParsePeers reads the --peers list: ID=HOST:PORT entries separated by
// commas.
func ParsePeers(s string) ([]Peer, error) {
	var peers []Peer
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, addr, ok := strings.Cut(item, "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("peer %q: want ID=HOST:PORT", item)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("peer %q: %w", item, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("peer id %q is listed twice", id)
		}
		seen[id] = true
		peers = append(peers, Peer{ID: id, Addr: addr})
	}
	if len(peers) == 0 {
		return nil, errors.New("no peers: want ID=HOST:PORT,ID=HOST:PORT")
	}
	return peers, nil
}

// Config configures a cluster node.
type Config struct {
	// NodeID is this node's id; it must be the id of one of Peers to
	// start a new cluster, or of a node added with `dss cluster add`.
	NodeID string
	// Listen is the address of the cluster listener (HOST:PORT).
	Listen string
	// Advertise is the address the other nodes reach this node at;
	// empty means this node's address in Peers, or else Listen.
	Advertise string
	// Peers are the initial members, the same list on every node.
	Peers []Peer
	// DataDir holds the Raft log (raft/log/), the term and vote
	// (raft/stable) and the snapshots (raft/snapshots/).
	DataDir string
	// StorageCheck is how often the node looks whether its Raft files
	// are still where they were (see Node.StorageErr); zero means one
	// second.
	StorageCheck time.Duration
	// Fsync is when appends to the Raft log reach stable storage.
	Fsync journal.Fsync
	// Secret authenticates and encrypts the cluster connections; required
	// unless Listen is a loopback address.
	Secret []byte
	// DedupeWindow is how long a write is remembered by its client id and
	// correlation data, so that a retry is not applied twice. Zero means
	// two minutes.
	DedupeWindow time.Duration
	// HeartbeatTimeout and ElectionTimeout bound how long a follower
	// waits for the leader before it starts an election; zero means
	// 400 ms. LeaderLeaseTimeout is how long a leader that hears from no
	// majority keeps serving; zero means 300 ms.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// SnapshotThreshold is how many log entries since the last snapshot
	// make a snapshot due; zero means 8192.
	SnapshotThreshold uint64
	// SnapshotInterval is how often Raft checks whether a snapshot is
	// due; zero means 10 s.
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries a snapshot leaves in the log, so
	// that a follower that fell a little behind needs no snapshot; zero
	// means 10240.
	TrailingLogs uint64
	// MaxInFlight bounds the requests this node has forwarded or is
	// confirming reads for; beyond it requests are answered "busy". Zero
	// means 65536.
	MaxInFlight int
	// RelayBuffer bounds the bytes of the messages kept for one peer
	// that cannot be reached (or has not yet acknowledged them); zero
	// means 64 MiB.
	RelayBuffer int64
	// Logger receives the log lines; nil means slog.Default().
	Logger *slog.Logger
	// LogTimings, when set, receives how long the Raft log's writes and
	// fsyncs take.
	LogTimings *journal.Timings
}

// Check reports the first setting that New would refuse, without
// starting anything.
func (c Config) Check() error { return c.setDefaults() }

func (c *Config) setDefaults() error {
	if c.NodeID == "" {
		return errors.New("cluster: a node id is required")
	}
	if c.Listen == "" {
		return errors.New("cluster: a cluster listener address is required")
	}
	if c.DataDir == "" {
		return errors.New("cluster: a cluster node needs a data directory")
	}
	if len(c.Secret) == 0 && !isLoopback(c.Listen) {
		return ErrNoSecret
	}
	if c.Advertise == "" {
		c.Advertise = c.Listen
		for _, p := range c.Peers {
			if p.ID == c.NodeID {
				c.Advertise = p.Addr
			}
		}
	}
	if c.StorageCheck == 0 {
		c.StorageCheck = defaultStorageCheck
	}
	if c.DedupeWindow == 0 {
		c.DedupeWindow = 2 * time.Minute
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = 400 * time.Millisecond
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = 400 * time.Millisecond
	}
	if c.LeaderLeaseTimeout == 0 {
		c.LeaderLeaseTimeout = 300 * time.Millisecond
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 8192
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = 10 * time.Second
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 10240
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 1 << 16
	}
	if c.RelayBuffer <= 0 {
		c.RelayBuffer = DefaultRelayBuffer
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
