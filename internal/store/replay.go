package store

import (
	"iter"
	"unsafe"
)

// Replay applies a change that a journal or a snapshot recorded. A change
// that is not newer than the key's last change is skipped: a snapshot taken
// while the journal kept growing may already hold a key's later state, and
// replaying the journal over it must not take the key back.
//
// A change with an empty Key only raises the machine's maximum version: it
// stands for versions the journal kept without their keys. Replay copies
// what it keeps.
func (m *Machine) Replay(c *Change) {
	if c.Seq > m.seq {
		m.seq = c.Seq
	}
	if m.maxVersion.Before(c.Version) {
		m.maxVersion = c.Version
	}
	if c.Key == "" {
		return
	}
	// The index reads the key, never writes it.
	s, found := m.lookup(unsafe.Slice(unsafe.StringData(c.Key), len(c.Key)))
	if found && s.rec.header().seq >= c.Seq {
		return
	}
	if c.Deleted {
		if found {
			m.drop(s)
		}
		return
	}
	var old *stored
	if found {
		old = &s
	}
	m.put(old, c)
	m.compact()
}

// Entries yields the state of every stored key as a Change, for a
// snapshot. The caller serializes access to the machine around each step
// of the iteration; keys changed between steps are yielded in their state
// at the time they are reached, or, when created meanwhile, may be missed.
// Replay makes a journal replayed over such a snapshot exact.
func (m *Machine) Entries() iter.Seq[Change] {
	return func(yield func(Change) bool) {
		for at := range m.keys.all() {
			r := m.arena.at(at)
			key := r.key()
			h := r.header()
			c := Change{
				Seq: h.seq, Key: key, Version: m.version(h), Value: r.value(),
				Volatile: h.flags&flagVolatile != 0,
			}
			if h.flags&flagFenced != 0 {
				c.Fence, c.Fenced = m.fences[key], true
			}
			if h.flags&flagDeadline != 0 {
				c.ExpiresAt = m.deadlineOf[key].at
			}
			if !yield(c) {
				return
			}
		}
	}
}
