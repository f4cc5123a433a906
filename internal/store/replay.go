package store

import "iter"

// Replay applies a change that a journal or a snapshot recorded. A change
// that is not newer than the key's last change is skipped: a snapshot taken
// while the journal kept growing may already hold a key's later state, and
// replaying the journal over it must not take the key back.
//
// A change with an empty Key only raises the machine's maximum version: it
// stands for versions the journal kept without their keys. Replay keeps
// c.Value; the caller must not modify it afterwards.
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
	e := m.keys[c.Key]
	if e != nil && e.seq >= c.Seq {
		return
	}
	if c.Deleted {
		if e != nil {
			m.remove(e)
		}
		return
	}
	if e == nil {
		e = &entry{key: c.Key, heapIndex: -1}
		m.keys[e.key] = e
		m.dataBytes += int64(len(e.key))
	}
	m.dataBytes += int64(len(c.Value) - len(e.value))
	e.value = c.Value
	e.version = c.Version
	e.fence, e.fenced = c.Fence, c.Fenced
	e.volatile = c.Volatile
	e.seq = c.Seq
	m.setDeadline(e, c.ExpiresAt)
}

// Entries yields the state of every stored key as a Change, for a
// snapshot. The caller serializes access to the machine around each step
// of the iteration; keys changed between steps are yielded in their state
// at the time they are reached, or, when created meanwhile, may be missed.
// Replay makes a journal replayed over such a snapshot exact.
func (m *Machine) Entries() iter.Seq[Change] {
	return func(yield func(Change) bool) {
		for _, e := range m.keys {
			c := Change{
				Seq: e.seq, Key: e.key, Version: e.version, Value: e.value,
				Fence: e.fence, Fenced: e.fenced, ExpiresAt: e.expiresAt, Volatile: e.volatile,
			}
			if !yield(c) {
				return
			}
		}
	}
}
