package raftlog

import (
	"errors"
	"fmt"

	"github.com/dssio/dss/internal/journal"
)

// A segment deleted, moved away or replaced while the node runs would
// take its entries with it at the next restart: a node that comes back
// without entries it acknowledged to the leader can elect a leader that
// lacks a committed write. StoreLogs looks at the segment it wrote before
// it acknowledges the batch (a deleted file has no link left), and Check,
// which the node calls every second, looks at every segment and the
// directory. Either fails the log: it takes no more entries, and Err
// reports why.

// ErrFileGone is the reason of the failure of a log whose file went away
// while in use.
var ErrFileGone = errors.New("a file of the Raft log was removed, moved or replaced while in use; " +
	"the node takes no more entries: stop it, move its data directory's raft directory away and start it again " +
	"with the same --node-id and --peers, and it catches up from the leader")

// Err returns the error that stopped the log, nil while it works. It
// does not wait for a write in progress.
func (l *Log) Err() error {
	if p := l.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Check fails the log if one of its files or its directory is not where
// it was, and returns the error that stopped the log, if any.
func (l *Log) Check() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.failed != nil || l.closed {
		return l.failed
	}
	err := journal.CheckDir(l.opts.Dir, l.dirInfo)
	l.mu.RLock()
	for _, s := range l.segs {
		if err != nil {
			break
		}
		err = journal.CheckInPlace(s.f, s.name)
	}
	l.mu.RUnlock()
	if err != nil {
		l.failGone(err)
	}
	return l.failed
}

// failGone stops the log for a file that went away; wmu is held.
func (l *Log) failGone(err error) {
	l.failed = fmt.Errorf("cluster: %w: %w", ErrFileGone, err)
	l.published()
	l.log.Error("a file of the Raft log went away; the node takes no more entries", "dir", l.opts.Dir, "err", err)
}

// published makes the failure recorded in failed known to Err and to
// opts.Failed; wmu is held.
func (l *Log) published() {
	failed := l.failed
	l.err.Store(&failed)
	if l.opts.Failed != nil {
		l.opts.Failed(failed)
	}
}
