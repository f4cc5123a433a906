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
// above everything in it. Watchers are not told of the keys that changed.
func (n *Node) Restore(m *store.Machine, lastTime int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.m = m
	n.lastTime = max(n.lastTime, lastTime)
	n.clock.Observe(m.MaxVersion())
	if d, ok := m.NextDeadline(); ok {
		n.scheduleExpiryLocked(d)
	}
}
