package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/server"
)

// secretEnv holds the cluster secret itself; --cluster-secret-file names a
// file that holds it. A secret is never a flag: command lines are visible
// to every user of the machine.
const secretEnv = "DSS_CLUSTER_SECRET"

// clusterFlags are the flags of dss serve that make a node a cluster
// member.
type clusterFlags struct {
	listen     string
	peers      string
	secretFile string
	// Raft's snapshot schedule, for tests that need snapshots soon.
	snapThreshold uint64
	snapInterval  time.Duration
	trailingLogs  uint64
	relayBuffer   int64
}

func (c *clusterFlags) add(f *pflag.FlagSet) {
	f.StringVar(&c.listen, "cluster-listen", "", "cluster listener HOST:PORT for Raft and the requests other nodes forward; empty: a single node")
	f.StringVar(&c.peers, "peers", "", "initial cluster members ID=HOST:PORT,ID=HOST:PORT,... (their --cluster-listen addresses; the same list on every node)")
	f.StringVar(&c.secretFile, "cluster-secret-file", "", "file holding the cluster secret (or set "+secretEnv+"); required unless --cluster-listen is a loopback address")
	f.Uint64Var(&c.snapThreshold, "cluster-snapshot-threshold", 0, "Raft log entries that make a snapshot due (0: 8192)")
	durationFlag(f, &c.snapInterval, "cluster-snapshot-interval", 0, "how often Raft checks whether a snapshot is due (0: 10s)")
	f.Uint64Var(&c.trailingLogs, "cluster-trailing-logs", 0, "Raft log entries a snapshot leaves in the log (0: 10240)")
	sizeFlag(f, &c.relayBuffer, "cluster-relay-buffer", cluster.DefaultRelayBuffer, "most bytes of QoS 1 and 2 messages kept for one other node that does not acknowledge them (it cannot be reached); past it the oldest are dropped")
	for _, name := range []string{"cluster-snapshot-threshold", "cluster-snapshot-interval", "cluster-trailing-logs"} {
		_ = f.MarkHidden(name)
	}
}

// apply puts the cluster settings into cfg.
func (c *clusterFlags) apply(cfg *server.Config) error {
	if c.listen == "" {
		if c.peers != "" {
			return fmt.Errorf("--peers needs --cluster-listen")
		}
		return nil
	}
	if c.peers == "" {
		return fmt.Errorf("--cluster-listen needs --peers ID=HOST:PORT,... (the initial members, the same list on every node)")
	}
	peers, err := cluster.ParsePeers(c.peers)
	if err != nil {
		return fmt.Errorf("--peers: %w", err)
	}
	secret, err := readSecret(c.secretFile)
	if err != nil {
		return err
	}
	cfg.Cluster = server.ClusterConfig{
		Listen: c.listen, Peers: peers, Secret: secret,
		SnapshotThreshold: c.snapThreshold, SnapshotInterval: c.snapInterval, TrailingLogs: c.trailingLogs,
		RelayBuffer: c.relayBuffer,
	}
	return nil
}

// readSecret returns the cluster secret from the file, or else from the
// environment; nil when neither is set.
func readSecret(file string) ([]byte, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--cluster-secret-file: %w", err)
		}
		return []byte(strings.TrimSpace(string(b))), nil
	}
	if s, ok := os.LookupEnv(secretEnv); ok {
		return []byte(strings.TrimSpace(s)), nil
	}
	return nil, nil
}
