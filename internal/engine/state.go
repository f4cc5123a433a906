package engine

import (
	"bytes"
	"iter"
	"strings"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// State is a copy of a node's machine at one point of its apply order,
// for a replicated log's snapshot.
type State struct {
	// Entries holds every key's state; the values are copies.
	Entries    []store.Change
	Seq        uint64
	MaxVersion hlc.Timestamp
	// LastTime is the latest time of an applied command.
	LastTime int64
}

// CopyState copies the machine. It takes the engine lock in steps of
// snapshotChunk keys, so requests go on meanwhile; the copy is of one
// point of the apply order only if nothing applies writes until it
// returns, which holds for a replicated log that calls it on the
// goroutine that calls ApplyCommitted.
func (n *Node) CopyState() State {
	n.mu.Lock()
	s := State{Seq: n.m.Seq(), MaxVersion: n.m.MaxVersion(), LastTime: n.lastTime}
	s.Entries = make([]store.Change, 0, n.m.Len())
	next, stop := iter.Pull(n.m.Entries())
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		stop()
		n.mu.Unlock()
	}()
	for {
		n.mu.Lock()
		for i := 0; i < snapshotChunk; i++ {
			c, ok := next()
			if !ok {
				n.mu.Unlock()
				return s
			}
			c.Key = strings.Clone(c.Key)
			c.Value = bytes.Clone(c.Value)
			c.Fence.Node = strings.Clone(c.Fence.Node)
			s.Entries = append(s.Entries, c)
		}
		n.mu.Unlock()
	}
}

// Restore replaces the machine with m, as a replicated log does when it
// installs a snapshot, and raises the clock and the time of decisions
// above everything in it. Every key that has a watcher now and that the
// snapshot changed is announced, before any change applied later: SET
// with its new value and version, or DELETE. A snapshot does not keep
// the version a deletion was given, so a DELETE carries the snapshot's
// highest version, which is at or after the deletion's and before any
// later change's.
func (n *Node) Restore(m *store.Machine, lastTime int64) {
	n.mu.Lock()
	old := n.m
	n.m = m
	n.lastTime = max(n.lastTime, lastTime)
	n.clock.Observe(m.MaxVersion())
	if d, ok := m.NextDeadline(); ok {
		n.scheduleExpiryLocked(d)
	}
	queued := false
	if n.notifier != nil {
		keys := n.notifier.Watched()
		if n.notifier.WatchesPatterns() {
			// Any key may have a watcher: every key of either machine.
			keys = allKeys(old, m)
		}
		for _, key := range keys {
			c, changed := restoredChange(old, m, key)
			if !changed {
				continue
			}
			if d := n.notifier.Changed(&c); d != nil {
				n.enqueueLocked(item{deliver: d})
				queued = true
			}
		}
	}
	n.mu.Unlock()
	if queued {
		n.signal()
	}
}

// allKeys returns the keys of a and of b, each once.
func allKeys(a, b *store.Machine) []string {
	keys := make([]string, 0, max(a.Len(), b.Len()))
	for c := range b.Entries() {
		keys = append(keys, c.Key)
	}
	for c := range a.Entries() {
		if _, _, ok := b.Lookup([]byte(c.Key)); !ok {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

// restoredChange returns how key changed from machine old to machine m.
func restoredChange(old, m *store.Machine, key string) (store.Change, bool) {
	k := []byte(key)
	_, before, had := old.Lookup(k)
	value, after, has := m.Lookup(k)
	switch {
	case has && (!had || before != after):
		return store.Change{Key: key, Version: after, Value: bytes.Clone(value)}, true
	case had && !has:
		return store.Change{Key: key, Deleted: true, Version: m.MaxVersion()}, true
	}
	return store.Change{}, false
}
