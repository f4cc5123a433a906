package pubsub

import (
	"encoding/binary"
	"fmt"
)

// snapshotVersion starts an encoded state.
const snapshotVersion = 1

// AppendSnapshot appends the whole state to b, for a Raft snapshot. It
// runs on the applying goroutine, so the state is exact at the applied
// index; lookups go on meanwhile.
func (s *State) AppendSnapshot(b []byte) []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	b = append(b, snapshotVersion)
	b = binary.AppendVarint(b, s.last)
	b = binary.AppendUvarint(b, uint64(len(s.routes)))
	for node, fs := range s.routes {
		b = appendString(b, node)
		b = binary.AppendUvarint(b, uint64(len(fs)))
		for f := range fs {
			b = appendString(b, f)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(s.retained)))
	for t, r := range s.retained {
		b = appendString(b, t)
		b = appendStamp(b, r.Stamp)
		b = appendBytes(b, r.Message)
		b = binary.AppendVarint(b, r.Expires)
	}
	b = binary.AppendUvarint(b, uint64(len(s.sessions)))
	for c, x := range s.sessions {
		b = appendString(b, c)
		b = appendString(b, x.Node)
		b = binary.AppendUvarint(b, x.Epoch)
		b = appendStamp(b, x.Stamp)
		b = appendString(b, x.Owner)
		b = appendBool(b, x.Clean)
		b = appendBool(b, x.Persistent)
		b = binary.AppendUvarint(b, uint64(x.Expiry))
		b = appendBytes(b, x.Subscriptions)
		b = appendBool(b, x.Connected)
		b = binary.AppendVarint(b, x.Ended)
	}
	return b
}

// Restore replaces the state with one AppendSnapshot wrote (empty data:
// the empty state, for a snapshot of a build without one) and tells the
// observer.
func (s *State) Restore(data []byte) error {
	fresh := New(nil)
	if len(data) > 0 {
		if err := fresh.decode(data); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.routes, s.index, s.retained, s.sessions = fresh.routes, fresh.index, fresh.retained, fresh.sessions
	s.last, s.tombstone = fresh.last, fresh.tombstone
	s.version.Add(1)
	s.mu.Unlock()
	if s.obs != nil {
		s.obs.Restored()
	}
	return nil
}

func (s *State) decode(data []byte) error {
	d := decoder{b: data}
	if v := d.byte(); d.err == nil && v != snapshotVersion {
		return fmt.Errorf("pubsub: a state of version %d, this build reads %d", v, snapshotVersion)
	}
	s.last = d.varint()
	for range d.count() {
		node := d.string()
		for range d.count() {
			s.addRoute(node, d.string())
		}
	}
	for range d.count() {
		t, stamp, msg, expires := d.string(), d.stamp(), d.clone(), d.varint()
		s.retained[t] = Retained{Stamp: stamp, Message: msg, Expires: expires}
		if msg == nil {
			s.tombstone++
		}
	}
	for range d.count() {
		c := d.string()
		x := &Session{Node: d.string(), Epoch: d.uvarint(), Stamp: d.stamp(), Owner: d.string(), Clean: d.bool(), Persistent: d.bool(),
			Expiry: uint32(d.uvarint()), Subscriptions: d.clone(), Connected: d.bool(), Ended: d.varint()}
		s.sessions[c] = x
	}
	if d.err == nil && len(d.b) != 0 {
		return fmt.Errorf("%w: %d bytes after the state", ErrMalformed, len(d.b))
	}
	return d.err
}
