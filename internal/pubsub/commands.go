package pubsub

import (
	"encoding/binary"
	"fmt"
	"github.com/dssio/dss/internal/bincode"

	"github.com/dssio/dss/hlc"
)

// The kinds of commands.
const (
	cmdRoutes        byte = 1 // a node's routes added and removed
	cmdRetain        byte = 2 // a retained message set or cleared
	cmdClaim         byte = 3 // a connection took a client id
	cmdSubscriptions byte = 4 // a persistent session's subscriptions
	cmdRelease       byte = 5 // a connection ended
	cmdNodeStarted   byte = 6 // a node's process started: its earlier connections are gone
	cmdDropNode      byte = 7 // a node left the cluster
	cmdExpire        byte = 8 // sessions past their expiry
	cmdExpireRetain  byte = 9 // retained messages past their expiry
)

// tombstoneAge is how long a cleared retained message is remembered, in
// command time: longer than a partition is expected to last.
const tombstoneAge = 24 * 60 * 60 * 1000

// Batch collects commands into the body of one log entry. The zero value
// is an empty batch.
type Batch struct {
	b []byte
	n int
}

// Len returns the number of commands in the batch.
func (b *Batch) Len() int { return b.n }

// Size returns the encoded size of the commands so far.
func (b *Batch) Size() int { return len(b.b) }

// Bytes returns the batch as Apply reads it.
func (b *Batch) Bytes() []byte {
	out := binary.AppendUvarint(make([]byte, 0, len(b.b)+binary.MaxVarintLen64), uint64(b.n))
	return append(out, b.b...)
}

// Reset empties the batch.
func (b *Batch) Reset() { b.b, b.n = b.b[:0], 0 }

// Routes records that node added and removed routes.
func (b *Batch) Routes(node string, add, remove []string) {
	b.b = append(b.b, cmdRoutes)
	b.b = bincode.AppendString(b.b, node)
	b.b = binary.AppendUvarint(b.b, uint64(len(add)))
	for _, f := range add {
		b.b = bincode.AppendString(b.b, f)
	}
	b.b = binary.AppendUvarint(b.b, uint64(len(remove)))
	for _, f := range remove {
		b.b = bincode.AppendString(b.b, f)
	}
	b.n++
}

// Retain sets topic's retained message (msg empty: clears it), as of
// stamp, expiring at expires (Unix nanoseconds, 0 for never); at is the
// command's time (Unix milliseconds).
func (b *Batch) Retain(topic string, stamp hlc.Timestamp, msg []byte, expires, at int64) {
	b.b = append(b.b, cmdRetain)
	b.b = bincode.AppendString(b.b, topic)
	b.b = bincode.AppendStamp(b.b, stamp)
	b.b = bincode.AppendBytes(b.b, msg)
	b.b = binary.AppendVarint(b.b, expires)
	b.b = binary.AppendVarint(b.b, at)
	b.n++
}

// RetainedExpiry names a retained message to clear: its topic, and the
// stamp of the message that expired.
type RetainedExpiry struct {
	Topic string
	Stamp hlc.Timestamp
}

// ExpireRetained clears the retained messages es names that are still
// those messages; at is the command's time.
func (b *Batch) ExpireRetained(es []RetainedExpiry, at int64) {
	b.b = append(b.b, cmdExpireRetain)
	b.b = binary.AppendVarint(b.b, at)
	b.b = binary.AppendUvarint(b.b, uint64(len(es)))
	for _, e := range es {
		b.b = bincode.AppendString(b.b, e.Topic)
		b.b = bincode.AppendStamp(b.b, e.Stamp)
	}
	b.n++
}

// Claim is a connection taking a client id.
type Claim struct {
	Client string
	Node   string
	Epoch  uint64
	Stamp  hlc.Timestamp
	Owner  string
	// Clean is a connection that starts a new session (Clean Start 1):
	// the subscriptions the cluster kept for the id are dropped.
	Clean      bool
	Persistent bool
	Expiry     uint32
}

// Claim records that a connection took a client id.
func (b *Batch) Claim(c Claim) {
	b.b = append(b.b, cmdClaim)
	b.b = bincode.AppendString(b.b, c.Client)
	b.b = bincode.AppendString(b.b, c.Node)
	b.b = binary.AppendUvarint(b.b, c.Epoch)
	b.b = bincode.AppendStamp(b.b, c.Stamp)
	b.b = bincode.AppendString(b.b, c.Owner)
	b.b = bincode.AppendBool(b.b, c.Clean)
	b.b = bincode.AppendBool(b.b, c.Persistent)
	b.b = binary.AppendUvarint(b.b, uint64(c.Expiry))
	b.n++
}

// Subscriptions records the subscriptions of the persistent session that
// the connection stamped stamp holds.
func (b *Batch) Subscriptions(client string, stamp hlc.Timestamp, subs []byte) {
	b.b = append(b.b, cmdSubscriptions)
	b.b = bincode.AppendString(b.b, client)
	b.b = bincode.AppendStamp(b.b, stamp)
	b.b = bincode.AppendBytes(b.b, subs)
	b.n++
}

// Release records that the connection stamped stamp ended at (Unix
// milliseconds): its session is kept for expiry seconds when persistent,
// and dropped otherwise.
func (b *Batch) Release(client string, stamp hlc.Timestamp, persistent bool, expiry uint32, at int64) {
	b.b = append(b.b, cmdRelease)
	b.b = bincode.AppendString(b.b, client)
	b.b = bincode.AppendStamp(b.b, stamp)
	b.b = bincode.AppendBool(b.b, persistent)
	b.b = binary.AppendUvarint(b.b, uint64(expiry))
	b.b = binary.AppendVarint(b.b, at)
	b.n++
}

// NodeStarted records that node's process epoch started at at: the
// connections of its earlier processes are gone.
func (b *Batch) NodeStarted(node string, epoch uint64, at int64) {
	b.b = append(b.b, cmdNodeStarted)
	b.b = bincode.AppendString(b.b, node)
	b.b = binary.AppendUvarint(b.b, epoch)
	b.b = binary.AppendVarint(b.b, at)
	b.n++
}

// DropNode records that node left the cluster at at: its routes go, and
// its connections are gone.
func (b *Batch) DropNode(node string, at int64) {
	b.b = append(b.b, cmdDropNode)
	b.b = bincode.AppendString(b.b, node)
	b.b = binary.AppendVarint(b.b, at)
	b.n++
}

// Expiry names a session to expire: the client id, and the stamp of the
// connection it was kept for.
type Expiry struct {
	Client string
	Stamp  hlc.Timestamp
}

// Expire removes the sessions es names that are still those sessions and
// have no connection.
func (b *Batch) Expire(es []Expiry) {
	b.b = append(b.b, cmdExpire)
	b.b = binary.AppendUvarint(b.b, uint64(len(es)))
	for _, e := range es {
		b.b = bincode.AppendString(b.b, e.Client)
		b.b = bincode.AppendStamp(b.b, e.Stamp)
	}
	b.n++
}

// changes are the observer calls an Apply owes, made after the lock.
type changes struct {
	retained []retainedChange
	claimed  []claimChange
}

type retainedChange struct {
	topic string
	r     Retained
}

type claimChange struct {
	client string
	s      Session
}

// Apply applies a batch of commands (Batch.Bytes). Every node applies the
// same bytes: a batch that does not decode is an error, and the caller
// must not go on with a state the others do not have.
func (s *State) Apply(data []byte) error {
	d := newDecoder(data)
	n := d.Count()
	var ch changes
	s.mu.Lock()
	for i := 0; i < n && d.Err() == nil; i++ {
		s.applyOne(&d, &ch)
	}
	s.mu.Unlock()
	if d.Err() == nil && d.Len() != 0 {
		d.SetErr(fmt.Errorf("%w: %d bytes after the last command", ErrMalformed, d.Len()))
	}
	if s.obs != nil {
		for _, c := range ch.retained {
			s.obs.RetainedChanged(c.topic, c.r)
		}
		for _, c := range ch.claimed {
			s.obs.Claimed(c.client, c.s)
		}
	}
	return d.Err()
}

// applyOne applies the next command of d. It holds s.mu.
func (s *State) applyOne(d *decoder, ch *changes) {
	switch kind := d.Byte(); kind {
	case cmdRoutes:
		node := d.Str()
		for range d.Count() {
			s.addRoute(node, d.Str())
		}
		for range d.Count() {
			s.removeRoute(node, d.Str())
		}
	case cmdRetain:
		topic, stamp, msg, expires, at := d.Str(), d.Stamp(), d.Clone(), d.Varint(), d.Varint()
		if d.Err() != nil {
			return
		}
		s.last = max(s.last, at)
		s.setRetained(topic, Retained{Stamp: stamp, Message: msg, Expires: expires}, ch)
	case cmdExpireRetain:
		at := d.Varint()
		s.last = max(s.last, at)
		for range d.Count() {
			topic, stamp := d.Str(), d.Stamp()
			if cur, ok := s.retained[topic]; d.Err() == nil && ok && cur.Message != nil && cur.Stamp == stamp {
				// A tombstone with the expired message's stamp: an
				// older set that comes late stays out.
				s.setRetained(topic, Retained{Stamp: stamp}, ch)
			}
		}
	case cmdClaim:
		c := Claim{Client: d.Str(), Node: d.Str(), Epoch: d.Uvarint(), Stamp: d.Stamp(), Owner: d.Str(),
			Clean: d.Bool(), Persistent: d.Bool(), Expiry: uint32(d.Uvarint())}
		if d.Err() != nil {
			return
		}
		cur := s.sessions[c.Client]
		if cur != nil && !c.Stamp.After(cur.Stamp) {
			return
		}
		if cur != nil && cur.Owner != c.Owner && (cur.Connected || cur.Persistent) {
			// Another principal's id: a node refuses such a CONNECT
			// (0x85) when it knows of the session; one that did not yet
			// know does not take it.
			return
		}
		x := &Session{Node: c.Node, Epoch: c.Epoch, Stamp: c.Stamp, Owner: c.Owner, Clean: c.Clean, Persistent: c.Persistent, Expiry: c.Expiry, Connected: true}
		if cur != nil && !c.Clean && cur.Persistent {
			x.Subscriptions = cur.Subscriptions // the session goes on
		}
		s.sessions[c.Client] = x
		ch.claimed = append(ch.claimed, claimChange{c.Client, *x})
	case cmdSubscriptions:
		client, stamp, subs := d.Str(), d.Stamp(), d.Clone()
		if x := s.sessions[client]; d.Err() == nil && x != nil && x.Stamp == stamp {
			x.Subscriptions = subs
		}
	case cmdRelease:
		client, stamp, persistent, expiry, at := d.Str(), d.Stamp(), d.Bool(), uint32(d.Uvarint()), d.Varint()
		if d.Err() != nil {
			return
		}
		s.last = max(s.last, at)
		if x := s.sessions[client]; x != nil && x.Stamp == stamp {
			x.Persistent, x.Expiry = persistent, expiry
			s.endConnection(client, x, at)
		}
	case cmdNodeStarted:
		node, epoch, at := d.Str(), d.Uvarint(), d.Varint()
		if d.Err() != nil {
			return
		}
		s.last = max(s.last, at)
		for c, x := range s.sessions {
			if x.Node == node && x.Epoch != epoch && x.Connected {
				s.endConnection(c, x, at)
			}
		}
	case cmdDropNode:
		node, at := d.Str(), d.Varint()
		if d.Err() != nil {
			return
		}
		s.last = max(s.last, at)
		for f := range s.routes[node] {
			s.removeRoute(node, f)
		}
		for c, x := range s.sessions {
			if x.Node == node && x.Connected {
				s.endConnection(c, x, at)
			}
		}
	case cmdExpire:
		for range d.Count() {
			client, stamp := d.Str(), d.Stamp()
			if x := s.sessions[client]; d.Err() == nil && x != nil && x.Stamp == stamp && !x.Connected {
				delete(s.sessions, client)
			}
		}
	default:
		if d.Err() == nil {
			d.SetErr(fmt.Errorf("%w: command kind %d", ErrMalformed, kind))
		}
	}
}

// setRetained makes r topic's retained message unless the one in place
// is newer; an expiry's tombstone takes the place of the message it
// clears, with its stamp.
func (s *State) setRetained(topic string, r Retained, ch *changes) {
	cur, had := s.retained[topic]
	if had && !r.Stamp.After(cur.Stamp) && !(r.Message == nil && cur.Message != nil && r.Stamp == cur.Stamp) {
		return // an older change than the one in place
	}
	if had && cur.Message == nil {
		s.tombstone--
	}
	s.retained[topic] = r
	if r.Message == nil {
		s.tombstone++
		s.pruneTombstones()
	}
	if had && cur.Message != nil || r.Message != nil {
		ch.retained = append(ch.retained, retainedChange{topic, r})
	}
}

// endConnection records that x's connection ended at at: a persistent
// session is kept for its expiry, any other goes.
func (s *State) endConnection(client string, x *Session, at int64) {
	if !x.Persistent {
		delete(s.sessions, client)
		return
	}
	x.Connected, x.Ended = false, at
}

func (s *State) addRoute(node, filter string) {
	fs := s.routes[node]
	if fs == nil {
		fs = map[string]struct{}{}
		s.routes[node] = fs
	}
	if _, ok := fs[filter]; ok {
		return
	}
	fs[filter] = struct{}{}
	s.index.add(node, filter)
	s.version.Add(1)
}

func (s *State) removeRoute(node, filter string) {
	fs := s.routes[node]
	if _, ok := fs[filter]; !ok {
		return
	}
	delete(fs, filter)
	if len(fs) == 0 {
		delete(s.routes, node)
	}
	s.index.remove(node, filter)
	s.version.Add(1)
}

// pruneTombstones forgets the clears older than tombstoneAge, once they
// are many.
func (s *State) pruneTombstones() {
	if s.tombstone < 1024 || s.tombstone < len(s.retained)/2 {
		return
	}
	for t, r := range s.retained {
		if r.Message == nil && r.Stamp.Wall < s.last-tombstoneAge {
			delete(s.retained, t)
			s.tombstone--
		}
	}
}
