package broker

import (
	"sync"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// registry holds the KEYNOTIFY registrations of this node's connections.
// A registration belongs to a connection, not to a client id: when a
// client id connects anew, the old connection's registrations go with it
// and the new one's stay.
//
// A notification goes to the registering connection alone, whether or not
// it subscribed to its notification topic (the vendor's Go client never
// does): it is never routed by topic, so nobody else receives it.
type registry struct {
	metrics *Metrics
	// send delivers a notification to one registered connection.
	send func(cl *mqtt.Client, pk *packets.Packet)
	// maxPerConn bounds the registrations of one connection; 0: none.
	maxPerConn int

	mu     sync.Mutex
	byKey  map[string]map[*mqtt.Client]struct{} // guarded by mu
	byConn map[*mqtt.Client]map[string]struct{} // guarded by mu
	// pats holds the registrations for patterns (KEYNOTIFY pattern
	// PATTERN); guarded by mu.
	pats patterns
}

var _ engine.Notifier = (*registry)(nil)

func newRegistry(m *Metrics, send func(*mqtt.Client, *packets.Packet)) *registry {
	return &registry{
		metrics: m,
		send:    send,
		byKey:   make(map[string]map[*mqtt.Client]struct{}),
		byConn:  make(map[*mqtt.Client]map[string]struct{}),
		pats:    newPatterns(),
	}
}

// KeyNotify registers or unregisters the calling connection.
func (r *registry) KeyNotify(op *engine.Op) {
	cl := op.Caller.(*call).client
	key := string(op.Request.Key)
	r.mu.Lock()
	defer r.mu.Unlock()
	if op.Request.Pattern {
		r.patternNotifyLocked(op, cl, key)
		return
	}
	if op.Request.Stop {
		_, op.Result.Watched = r.byKey[key][cl]
		r.removeLocked(cl, key)
		return
	}
	if cl.Closed() {
		return // OnDisconnect may already have run; the registration would leak
	}
	watchers := r.byKey[key]
	if watchers == nil {
		watchers = make(map[*mqtt.Client]struct{})
		r.byKey[key] = watchers
	}
	if _, ok := watchers[cl]; ok {
		return
	}
	keys := r.byConn[cl]
	if r.fullLocked(cl) {
		if len(watchers) == 0 {
			delete(r.byKey, key)
		}
		op.Result.Err = wire.ErrQuotaExceeded
		return
	}
	if wire.NotifyTopicLen(len(cl.ID), len(key)) > wire.MaxTopicLen {
		// The client id and the key make a topic MQTT cannot carry:
		// refused here, as the encoder would refuse every notification.
		if len(watchers) == 0 {
			delete(r.byKey, key)
		}
		op.Result.Err = wire.ErrKeyTooLong
		return
	}
	watchers[cl] = struct{}{}
	if keys == nil {
		keys = make(map[string]struct{})
		r.byConn[cl] = keys
	}
	keys[key] = struct{}{}
	r.metrics.Watches.Inc()
}

// fullLocked reports whether cl has as many registrations, for keys and
// patterns together, as it may.
func (r *registry) fullLocked(cl *mqtt.Client) bool {
	return r.maxPerConn > 0 && len(r.byConn[cl])+r.pats.count(cl) >= r.maxPerConn
}

// patternNotifyLocked carries out KEYNOTIFY pattern PATTERN [STOP]. The
// registration needs no grant: under a policy, the notifications leave
// out the keys the client may not read.
func (r *registry) patternNotifyLocked(op *engine.Op, cl *mqtt.Client, pattern string) {
	if op.Request.Stop {
		if op.Result.Watched = r.pats.remove(cl, pattern); op.Result.Watched {
			r.metrics.Watches.Dec()
		}
		return
	}
	if cl.Closed() || r.pats.has(cl, pattern) {
		return
	}
	if r.fullLocked(cl) {
		op.Result.Err = wire.ErrQuotaExceeded
		return
	}
	r.pats.add(cl, pattern)
	r.metrics.Watches.Inc()
}

func (r *registry) removeLocked(cl *mqtt.Client, key string) {
	watchers, ok := r.byKey[key]
	if !ok {
		return
	}
	if _, ok := watchers[cl]; !ok {
		return
	}
	delete(watchers, cl)
	if len(watchers) == 0 {
		delete(r.byKey, key)
	}
	delete(r.byConn[cl], key)
	if len(r.byConn[cl]) == 0 {
		delete(r.byConn, cl)
	}
	r.metrics.Watches.Dec()
}

// keysOf returns the keys cl is registered for.
func (r *registry) keysOf(cl *mqtt.Client) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.byConn[cl]))
	for k := range r.byConn[cl] {
		keys = append(keys, k)
	}
	return keys
}

// dropConnection removes every registration of a connection that ended.
func (r *registry) dropConnection(cl *mqtt.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key := range r.byConn[cl] {
		r.removeLocked(cl, key)
	}
	for _, pattern := range r.pats.of(cl) {
		r.pats.remove(cl, pattern)
		r.metrics.Watches.Dec()
	}
}

// Watched returns the keys that have a watcher.
func (r *registry) Watched() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.byKey))
	for k := range r.byKey {
		keys = append(keys, k)
	}
	return keys
}

// WatchesPatterns reports whether a connection is registered for a
// pattern now.
func (r *registry) WatchesPatterns() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pats.byText) > 0
}

// Changed returns the delivery of c to the connections watching its key
// now, by the key itself or by a pattern it matches: once to each, however
// many of its registrations match.
//
// Most changes have no watcher: finding none allocates nothing, which is
// why the delivery below captures a copy of conns, not conns itself (a
// variable the returned function captures lives on the heap).
func (r *registry) Changed(c *store.Change) func() {
	r.mu.Lock()
	watchers := r.byKey[c.Key]
	if len(watchers) == 0 && len(r.pats.byText) == 0 {
		r.mu.Unlock()
		return nil
	}
	conns := make([]*mqtt.Client, 0, len(watchers))
	for cl := range watchers {
		conns = append(conns, cl)
	}
	var seen map[*mqtt.Client]struct{}
	r.pats.matching(c.Key, func(cl *mqtt.Client) {
		if seen == nil {
			seen = make(map[*mqtt.Client]struct{}, len(conns)+1)
			for _, w := range conns {
				seen[w] = struct{}{}
			}
		}
		if _, dup := seen[cl]; dup {
			return
		}
		seen[cl] = struct{}{}
		// Under a policy, a pattern hears only of keys the client may
		// read, by the grants in force now.
		if a := accessOf(cl); a != nil {
			if mayRead := a.readable(); mayRead != nil && !mayRead(c.Key) {
				return
			}
		}
		conns = append(conns, cl)
	})
	r.mu.Unlock()
	if len(conns) == 0 {
		return nil
	}
	change, to := *c, conns
	return func() { r.deliver(&change, to) }
}

func (r *registry) deliver(c *store.Change, conns []*mqtt.Client) {
	var payload []byte
	if c.Deleted {
		payload = resp.AppendArray(nil, []byte("NOTIFY"), []byte("DELETE"))
	} else {
		payload = resp.AppendArray(make([]byte, 0, len(c.Value)+48), []byte("NOTIFY"), []byte("SET"), []byte("VALUE"), c.Value)
	}
	version := c.Version.String()
	key := []byte(c.Key)
	for _, cl := range conns {
		// A connection whose client id connected anew is on its way out
		// (its registrations go with it); the new connection registers
		// for itself.
		if cl.Closed() || cl.IsTakenOver() {
			continue
		}
		if wire.NotifyTopicLen(len(cl.ID), len(key)) > wire.MaxTopicLen {
			// Only a pattern's key can make a topic MQTT cannot carry (a
			// registration for the key itself is refused), and only past
			// the default --max-key-size, with which every client id a
			// CONNECT may carry fits.
			continue
		}
		r.send(cl, &packets.Packet{
			FixedHeader: packets.FixedHeader{Qos: 1},
			TopicName:   wire.NotifyTopic(cl.ID, key),
			Payload:     payload,
			Properties: packets.Properties{
				ContentType: wire.ContentType,
				User:        []packets.UserProperty{{Key: wire.PropTimestamp, Val: version}},
			},
		})
		r.metrics.Notifications.Inc()
	}
}
