package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// BackupWriter receives a consistent copy of the machine from Backup.
// Begin comes first, then Changes and Keys, in the order Backup calls
// them, then Finish. Replayed in that order (store.Machine.Replay) they
// rebuild the machine exactly as it was at the seq and version given to
// Finish. Every method is called outside the engine lock.
type BackupWriter interface {
	// Begin starts the copy of a machine whose last change is seq.
	Begin(seq uint64, maxVersion hlc.Timestamp) error
	// Keys adds the state of keys as the copy reached them.
	Keys(entries []store.Change) error
	// Changes adds the changes applied since the copy began, in order.
	Changes(changes []store.Change) error
	// Finish ends the copy: it holds every change up to seq.
	Finish(seq uint64, maxVersion hlc.Timestamp) error
}

// maxBackupLag bounds the bytes of keys and values changed while a backup
// runs that wait for the backup's reader: a backup read more slowly than
// the store changes fails instead of filling the memory.
var maxBackupLag int64 = 256 << 20

// ErrBackupLag reports a backup that fell too far behind the changes.
var ErrBackupLag = errors.New("engine: the store changed faster than the backup was read")

// backupTap collects the changes applied while a backup runs.
type backupTap struct {
	changes []store.Change // guarded by Node.mu
	bytes   int64          // guarded by Node.mu
	lagged  bool           // guarded by Node.mu
}

// addLocked takes the changes of one command.
func (t *backupTap) addLocked(changes []store.Change) {
	if t.lagged {
		return
	}
	for i := range changes {
		t.bytes += int64(len(changes[i].Key) + len(changes[i].Value))
	}
	if t.bytes > maxBackupLag {
		t.lagged, t.changes = true, nil
		return
	}
	t.changes = append(t.changes, changes...)
}

// Backup copies the machine to w while the node keeps serving, as a
// snapshot is: the keys in steps of snapshotChunk under the lock. Unlike
// a snapshot, the copy is consistent on its own: the changes applied while
// it runs go to w as well, each before the keys copied after it, so that
// replaying what w received gives the machine as it was when the last
// step was copied. Values are not copied in memory (the machine never
// changes a value in place); the changes that wait for w are bounded (256 MiB of
// keys and values; beyond, Backup fails with ErrBackupLag). ctx ends the backup early.
func (n *Node) Backup(ctx context.Context, w BackupWriter) error {
	n.mu.Lock()
	if n.failed != nil {
		n.mu.Unlock()
		return n.failed
	}
	tap := &backupTap{}
	n.backups = append(n.backups, tap)
	seq, maxVersion := n.m.Seq(), n.m.MaxVersion()
	next, stop := iter.Pull(n.m.Entries())
	n.mu.Unlock()
	finished := false
	defer func() {
		if !finished {
			n.mu.Lock()
			stop()
			n.removeTapLocked(tap)
			n.mu.Unlock()
		}
	}()

	if err := w.Begin(seq, maxVersion); err != nil {
		return fmt.Errorf("engine: backup: %w", err)
	}
	chunk := make([]store.Change, 0, snapshotChunk)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("engine: backup: %w", err)
		}
		done := false
		n.mu.Lock()
		if tap.lagged {
			n.mu.Unlock()
			return ErrBackupLag
		}
		chunk, done = nextChunk(chunk, next)
		changes := tap.changes
		tap.changes, tap.bytes = nil, 0
		if done {
			seq, maxVersion = n.m.Seq(), n.m.MaxVersion()
			stop()
			n.removeTapLocked(tap)
			finished = true
		}
		n.mu.Unlock()
		if err := w.Changes(changes); err != nil {
			return fmt.Errorf("engine: backup: %w", err)
		}
		if err := w.Keys(chunk); err != nil {
			return fmt.Errorf("engine: backup: %w", err)
		}
		if done {
			if err := w.Finish(seq, maxVersion); err != nil {
				return fmt.Errorf("engine: backup: %w", err)
			}
			return nil
		}
	}
}

func (n *Node) removeTapLocked(t *backupTap) {
	n.backups = slices.DeleteFunc(n.backups, func(x *backupTap) bool { return x == t })
}
