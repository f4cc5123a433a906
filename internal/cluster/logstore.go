package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/internal/cluster/raftlog"
)

// logCacheSize is how many of the latest entries are kept in memory, so
// that the leader sends what it just appended without reading it back.
const logCacheSize = 512

// ErrOldLogFormat refuses a data directory written by an earlier build,
// whose Raft log was one bbolt file (raft/raft.db).
var ErrOldLogFormat = errors.New("cluster: the data directory holds a Raft log in the format of an earlier dss (raft/raft.db), which this version does not read")

// logStores opens the Raft log (dir/log) and the term and vote
// (dir/stable) in the node's Raft directory dir.
func (n *Node) openLogStores(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "raft.db")); err == nil {
		return fmt.Errorf("%w: move %s away and start the node again with the same --node-id and --peers: "+
			"it is still a member of the cluster and catches up from the leader's snapshot "+
			"(if every node of the cluster has such a file, start them all with empty data directories: a new cluster)",
			ErrOldLogFormat, dir)
	}
	l, err := raftlog.Open(raftlog.Options{Dir: filepath.Join(dir, "log"), Fsync: n.cfg.Fsync, Logger: n.log, Timings: n.cfg.LogTimings,
		Failed: func(error) { n.checkStorageSoon() }})
	if err != nil {
		return err
	}
	st, err := raftlog.OpenStable(filepath.Join(dir, "stable"))
	if err != nil {
		l.Close()
		return err
	}
	cache, err := raft.NewLogCache(logCacheSize, l)
	if err != nil {
		l.Close()
		return fmt.Errorf("cluster: %w", err)
	}
	n.disk, n.logs, n.stable = l, cache, st
	return nil
}
