package engine

import (
	"fmt"
	"iter"
	"time"

	"github.com/dssio/dss/internal/store"
)

// snapshotChunk is how many keys one step of a snapshot copies while it
// holds the engine lock: small enough that requests hardly notice.
const snapshotChunk = 512

// nextChunk refills chunk with the next snapshotChunk entries of next, or
// as many as are left, and reports whether next is exhausted. The caller
// holds the engine lock.
func nextChunk(chunk []store.Change, next func() (store.Change, bool)) ([]store.Change, bool) {
	chunk = chunk[:0]
	for len(chunk) < snapshotChunk {
		c, ok := next()
		if !ok {
			return chunk, true
		}
		chunk = append(chunk, c)
	}
	return chunk, false
}

// snapshotLoop compacts the journal whenever it has grown enough.
func (n *Node) snapshotLoop(every time.Duration) {
	defer n.done.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		n.mu.Lock()
		keys, data := n.m.Len(), n.m.DataBytes()
		n.mu.Unlock()
		if !n.journal.SnapshotDue(keys, data) {
			continue
		}
		start := time.Now()
		if err := n.Snapshot(); err != nil {
			n.log.Error("snapshot failed; the journal keeps growing until one succeeds", "err", err)
			continue
		}
		n.log.Info("snapshot written", "took", time.Since(start).Round(time.Millisecond))
	}
}

// Snapshot writes a snapshot of the machine through the journal while the
// node keeps serving: the keys are copied in small steps under the lock.
func (n *Node) Snapshot() error {
	if n.journal == nil {
		return nil
	}
	n.mu.Lock()
	if n.failed != nil {
		n.mu.Unlock()
		return n.failed
	}
	w, err := n.journal.BeginSnapshot(n.m.Seq(), n.m.MaxVersion())
	if err != nil {
		n.mu.Unlock()
		return fmt.Errorf("engine: snapshot: %w", err)
	}
	next, stop := iter.Pull(n.m.Entries())
	n.mu.Unlock()

	chunk := make([]store.Change, 0, snapshotChunk)
	for {
		done := false
		n.mu.Lock()
		chunk, done = nextChunk(chunk, next)
		maxVersion := n.m.MaxVersion()
		if done {
			stop()
		}
		n.mu.Unlock()
		if err := w.Write(chunk); err != nil {
			n.mu.Lock()
			stop()
			n.mu.Unlock()
			w.Abort()
			return fmt.Errorf("engine: snapshot: %w", err)
		}
		if done {
			if err := w.Finish(maxVersion); err != nil {
				return fmt.Errorf("engine: snapshot: %w", err)
			}
			return nil
		}
	}
}
