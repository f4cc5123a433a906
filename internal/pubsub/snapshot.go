package pubsub

import (
	"encoding/binary"
	"fmt"
	"github.com/dssio/dss/internal/bincode"
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
		b = bincode.AppendString(b, node)
		b = binary.AppendUvarint(b, uint64(len(fs)))
		for f := range fs {
			b = bincode.AppendString(b, f)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(s.retained)))
	for t, r := range s.retained {
		b = bincode.AppendString(b, t)
		b = bincode.AppendStamp(b, r.Stamp)
		b = bincode.AppendBytes(b, r.Message)
		b = binary.AppendVarint(b, r.Expires)
	}
	b = binary.AppendUvarint(b, uint64(len(s.sessions)))
	for c, x := range s.sessions {
		b = bincode.AppendString(b, c)
		b = bincode.AppendString(b, x.Node)
		b = binary.AppendUvarint(b, x.Epoch)
		b = bincode.AppendStamp(b, x.Stamp)
		b = bincode.AppendString(b, x.Owner)
		b = bincode.AppendBool(b, x.Clean)
		b = bincode.AppendBool(b, x.Persistent)
		b = binary.AppendUvarint(b, uint64(x.Expiry))
		b = bincode.AppendBytes(b, x.Subscriptions)
		b = bincode.AppendBool(b, x.Connected)
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
	d := newDecoder(data)
	if v := d.Byte(); d.Err() == nil && v != snapshotVersion {
		return fmt.Errorf("pubsub: a state of version %d, this build reads %d", v, snapshotVersion)
	}
	s.last = d.Varint()
	for range d.Count() {
		node := d.Str()
		for range d.Count() {
			s.addRoute(node, d.Str())
		}
	}
	for range d.Count() {
		t, stamp, msg, expires := d.Str(), d.Stamp(), d.Clone(), d.Varint()
		s.retained[t] = Retained{Stamp: stamp, Message: msg, Expires: expires}
		if msg == nil {
			s.tombstone++
		}
	}
	for range d.Count() {
		c := d.Str()
		x := &Session{Node: d.Str(), Epoch: d.Uvarint(), Stamp: d.Stamp(), Owner: d.Str(), Clean: d.Bool(), Persistent: d.Bool(),
			Expiry: uint32(d.Uvarint()), Subscriptions: d.Clone(), Connected: d.Bool(), Ended: d.Varint()}
		s.sessions[c] = x
	}
	if d.Err() == nil && d.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the state", ErrMalformed, d.Len())
	}
	return d.Err()
}
