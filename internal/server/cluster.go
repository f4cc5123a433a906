package server

import (
	"context"
	"path/filepath"

	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/journal"
)

// newClusterNode opens the cluster node of cfg: its listener and its Raft
// log and snapshots under the data directory.
func newClusterNode(cfg Config, timings *journal.Timings) (*cluster.Node, error) {
	c := clusterConfig(cfg)
	c.LogTimings = timings
	return cluster.New(c)
}

// clusterConfig is the cluster node's configuration in cfg.
func clusterConfig(cfg Config) cluster.Config {
	return cluster.Config{
		NodeID:           cfg.NodeID,
		Listen:           cfg.Cluster.Listen,
		Peers:            cfg.Cluster.Peers,
		DataDir:          filepath.Clean(cfg.DataDir),
		Fsync:            cfg.Fsync,
		Secret:           cfg.Cluster.Secret,
		HeartbeatTimeout: cfg.Cluster.HeartbeatTimeout,
		ElectionTimeout:  cfg.Cluster.HeartbeatTimeout,
		// A lease within the heartbeat timeout, as Raft requires.
		LeaderLeaseTimeout: cfg.Cluster.HeartbeatTimeout * 3 / 4,
		SnapshotThreshold:  cfg.Cluster.SnapshotThreshold,
		SnapshotInterval:   cfg.Cluster.SnapshotInterval,
		TrailingLogs:       cfg.Cluster.TrailingLogs,
		RelayBuffer:        cfg.Cluster.RelayBuffer,
		Logger:             cfg.Logger,
	}
}

// ClusterAddr returns the address of the cluster listener, or "" for a
// single node.
func (s *Server) ClusterAddr() string {
	if s.cluster == nil {
		return ""
	}
	return s.cluster.Addr()
}

// ClusterStatus returns the cluster's status as this node sees it; ok is
// false for a single node.
func (s *Server) ClusterStatus(ctx context.Context) (st cluster.Status, ok bool, err error) {
	if s.cluster == nil {
		return cluster.Status{}, false, nil
	}
	st, err = s.cluster.Status(ctx)
	return st, true, err
}
