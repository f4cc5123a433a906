package pubsub

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dssio/dss/hlc"
)

// Retained is a retained message in the replicated state.
type Retained struct {
	// Stamp is when the message was set or cleared, by the clock of the
	// node its publisher was connected to; the greatest stamp wins.
	Stamp hlc.Timestamp
	// Message is the message as the broker binding encoded it; nil for a
	// clear (a tombstone, kept for a while so that an older set arriving
	// later does not bring the message back).
	Message []byte
	// Expires is when the message expires (Unix nanoseconds), 0 for
	// never: the leader then clears it.
	Expires int64
}

// Session is the owner of a client id and what the cluster keeps of its
// session.
type Session struct {
	// Node holds, or last held, the client's connection; Epoch is that
	// node's process (drawn when it started), Stamp when the connection
	// took the id. The greatest stamp owns the id.
	Node  string
	Epoch uint64
	Stamp hlc.Timestamp
	// Owner names who authenticated the connection ("" without
	// authentication): a connection of another owner may not take the
	// id, as on one node.
	Owner string
	// Clean is set when the connection started a new session (Clean
	// Start 1) rather than resuming one.
	Clean bool
	// Persistent sessions outlive their connection, for Expiry seconds
	// after it ends.
	Persistent bool
	Expiry     uint32
	// Subscriptions of a persistent session, as the broker binding
	// encoded them.
	Subscriptions []byte
	// Connected is false once the connection ended (at Ended, Unix
	// milliseconds of the command that said so).
	Connected bool
	Ended     int64
}

// Observer is told of the changes the broker must mirror. Its methods are
// called on the goroutine that applies commands, without the state's lock;
// they must not block.
type Observer interface {
	// RetainedChanged: topic's retained message is now r (r.Message nil:
	// none).
	RetainedChanged(topic string, r Retained)
	// Claimed: client's id now belongs to s (a connection on s.Node).
	Claimed(client string, s Session)
	// Restored: the whole state was replaced (a snapshot installed).
	Restored()
}

// State is the replicated metadata of the broker. The zero value is not
// usable; make one with New.
type State struct {
	obs Observer

	mu       sync.RWMutex
	routes   map[string]map[string]struct{} // guarded by mu; node → its filters
	index    trie                           // guarded by mu
	retained map[string]Retained            // guarded by mu; topic → message or tombstone
	sessions map[string]*Session            // guarded by mu; client id → owner
	// last is the greatest command time applied (Unix milliseconds):
	// tombstones are pruned by it, so every node prunes alike.
	last      int64 // guarded by mu
	tombstone int   // guarded by mu; retained tombstones kept
	// version counts the changes of the routes, for caches of lookups.
	version atomic.Uint64
}

// RoutesVersion returns a number that changes whenever a route does.
func (s *State) RoutesVersion() uint64 { return s.version.Load() }

// New returns an empty state that tells obs (which may be nil) of its
// changes.
func New(obs Observer) *State {
	s := &State{obs: obs}
	s.reset()
	return s
}

func (s *State) reset() {
	s.routes = map[string]map[string]struct{}{}
	s.index = trie{}
	s.retained = map[string]Retained{}
	s.sessions = map[string]*Session{}
	s.last, s.tombstone = 0, 0
}

// Match adds to m (after emptying it) the routes whose filter matches
// topic.
func (s *State) Match(topic string, m *Matches) {
	m.reset()
	s.mu.RLock()
	s.index.match(topic, m)
	s.mu.RUnlock()
}

// HasRoute reports whether node has a route for filter.
func (s *State) HasRoute(node, filter string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.routes[node][filter]
	return ok
}

// Routes returns the filters of node's routes, sorted.
func (s *State) Routes(node string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.routes[node]))
	for f := range s.routes[node] {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// RouteCounts returns the number of routes of each node that has any.
func (s *State) RouteCounts() map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]int, len(s.routes))
	for n, fs := range s.routes {
		out[n] = len(fs)
	}
	return out
}

// Retained returns topic's retained message; ok is false when there is
// none (never set, or cleared).
func (s *State) Retained(topic string) (Retained, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.retained[topic]
	return r, ok && r.Message != nil
}

// RetainedCount returns the number of retained messages (not counting
// tombstones).
func (s *State) RetainedCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.retained) - s.tombstone
}

// EachRetained calls fn with every retained message (not tombstones), in
// no particular order, under the read lock: fn must not call the state.
func (s *State) EachRetained(fn func(topic string, r Retained)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for t, r := range s.retained {
		if r.Message != nil {
			fn(t, r)
		}
	}
}

// ExpiredRetained returns up to limit retained messages that expired by
// now (Unix nanoseconds), for a command that clears them.
func (s *State) ExpiredRetained(now int64, limit int) []RetainedExpiry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []RetainedExpiry
	for t, r := range s.retained {
		if r.Message != nil && r.Expires != 0 && r.Expires <= now {
			out = append(out, RetainedExpiry{Topic: t, Stamp: r.Stamp})
			if len(out) == limit {
				break
			}
		}
	}
	return out
}

// Session returns the owner of client's id, if any.
func (s *State) Session(client string) (Session, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if x, ok := s.sessions[client]; ok {
		return *x, true
	}
	return Session{}, false
}

// SessionCount returns the number of client ids the state holds.
func (s *State) SessionCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.sessions)
}

// Expired returns up to limit sessions whose connection ended more than
// their expiry before now (Unix milliseconds), with their stamps, for an
// expiry command.
func (s *State) Expired(now int64, limit int) []Expiry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Expiry
	for c, x := range s.sessions {
		if !x.Connected && x.Ended+int64(x.Expiry)*1000 < now {
			out = append(out, Expiry{Client: c, Stamp: x.Stamp})
			if len(out) == limit {
				break
			}
		}
	}
	return out
}

// NodesWithState returns the nodes that have routes or own sessions.
func (s *State) NodesWithState() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[string]bool{}
	for n := range s.routes {
		seen[n] = true
	}
	for _, x := range s.sessions {
		seen[x.Node] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
