package cluster

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// A node's Raft state is three kinds of file under its data directory:
// the log's segments, the term and vote, and the snapshots. One that is
// deleted, moved away or replaced while the node runs (a clean-up script,
// an operator, a restore done by hand) is found within a second:
//   - a segment of the log: the log fails (see raftlog.ErrFileGone); the
//     node stops its part in Raft, as if it had crashed (a member that
//     cannot append would fail every append the leader sends, time out,
//     and disturb the others with elections), refuses its clients' writes
//     and fails /healthz until it is started again on a fresh raft
//     directory;
//   - the term and vote: written again from memory, which holds them all;
//   - the snapshot the log starts after: taken again (Raft's snapshot of
//     the state machine as applied now), so that a restart still finds
//     the state the log's first entry follows. Until it is, the node
//     refuses writes as for a lost segment.
//
// Each is logged at ERROR with the file.

// errSnapshotGone is the storage error of a node whose latest snapshot
// went away and is not taken again yet.
var errSnapshotGone = errors.New("cluster: the Raft snapshot the log starts after was removed, moved or replaced while in use, and taking it again failed")

// defaultStorageCheck is how often a node looks at its files.
const defaultStorageCheck = time.Second

// StorageErr returns the error that stops this node's writes because its
// Raft files are not what a restart needs, nil while they are.
func (n *Node) StorageErr() error {
	if err := n.disk.Err(); err != nil {
		return err
	}
	if p := n.snapErr.Load(); p != nil {
		return *p
	}
	return nil
}

// watchStorage looks at the node's files every interval until it stops.
func (n *Node) watchStorage(interval time.Duration) {
	defer n.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		case <-n.storageWake:
		}
		n.checkStorage()
	}
}

// checkStorageSoon has the node look at its files now: its log failed.
func (n *Node) checkStorageSoon() {
	select {
	case n.storageWake <- struct{}{}:
	default:
	}
}

// checkStorage looks at the log, the term and vote, and the snapshots
// once, and repairs what can be repaired.
func (n *Node) checkStorage() {
	if err := n.disk.Check(); err != nil { // logs what it finds
		if n.raftStopped.CompareAndSwap(false, true) {
			n.log.Error("this node leaves Raft until it is started again: the others go on without it", "err", err)
			if serr := n.raft.Shutdown().Error(); serr != nil {
				n.log.Warn("stopping Raft", "err", serr)
			}
		}
		return
	}
	if found, err := n.stable.Repair(); found != nil {
		if err != nil {
			n.log.Error("the Raft term and vote file went away and could not be written again", "found", found, "err", err)
		} else {
			n.log.Error("the Raft term and vote file went away; written again from memory", "found", found)
		}
	}
	n.checkSnapshots()
}

// checkSnapshots takes a snapshot again if the newest one Raft counts on
// is not in the snapshot store.
func (n *Node) checkSnapshots() {
	last, _ := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64)
	if last == 0 {
		return
	}
	metas, err := n.snaps.List()
	if err == nil && len(metas) > 0 && metas[0].Index >= last {
		n.snapErr.Store(nil)
		return
	}
	found := fmt.Sprintf("no snapshot at or after entry %d in %s", last, filepath.Join(n.cfg.DataDir, "raft", "snapshots"))
	if err != nil {
		found = err.Error()
	}
	if serr := n.await(n.raft.Snapshot()); serr != nil {
		gone := fmt.Errorf("%w: %s: %w", errSnapshotGone, found, serr)
		if n.snapErr.Load() == nil {
			n.log.Error("the Raft snapshot went away and could not be taken again; the node refuses writes until it is", "found", found, "err", serr)
		}
		n.snapErr.Store(&gone)
		return
	}
	n.snapErr.Store(nil)
	n.log.Error("the Raft snapshot went away; taken again from the state as applied now", "found", found)
}
