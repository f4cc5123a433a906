package broker

import (
	"sync"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/service"
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
	// keep is mayHear as a func value, bound once: a method value taken
	// per change would allocate.
	keep func(cl *mqtt.Client, key string, a *access, byPattern bool) bool

	mu sync.Mutex
	// w holds the registrations, for keys and for patterns (KEYNOTIFY
	// pattern PATTERN), each with the access of its connection (nil
	// without authentication), which stays the connection's for its
	// life: a change's recipients are found without a look at the
	// connections themselves. Guarded by mu.
	w *service.Watches[*mqtt.Client, *access]
}

var _ engine.Notifier = (*registry)(nil)

// newRegistry returns an empty registry.
func newRegistry(m *Metrics, send func(*mqtt.Client, *packets.Packet)) *registry {
	return &registry{metrics: m, send: send, keep: mayHear, w: service.NewWatches[*mqtt.Client, *access]()}
}

// KeyNotify registers or unregisters the calling connection. A
// registration for a pattern needs no grant: under a policy, its
// notifications leave out the keys the client may not read.
func (r *registry) KeyNotify(op *engine.Op) {
	cl := op.Caller.(*call).client
	key, pattern := string(op.Request.Key), op.Request.Pattern
	r.mu.Lock()
	defer r.mu.Unlock()
	if op.Request.Stop {
		if _, op.Result.Watched = r.w.Remove(cl, key, pattern); op.Result.Watched {
			r.metrics.Watches.Dec()
		}
		return
	}
	if cl.Closed() {
		return // OnDisconnect may already have run; the registration would leak
	}
	added, err := r.w.Add(cl, len(cl.ID), key, pattern, accessOf(cl))
	if err != nil {
		op.Result.Err = err
		return
	}
	if added {
		r.metrics.Watches.Inc()
	}
}

// keysOf returns the keys cl is registered for.
func (r *registry) keysOf(cl *mqtt.Client) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w.KeysOf(cl)
}

// dropConnection removes every registration of a connection that ended.
func (r *registry) dropConnection(cl *mqtt.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.metrics.Watches.Sub(float64(r.w.Drop(cl)))
}

// Watched returns the keys that have a watcher.
func (r *registry) Watched() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w.Keys()
}

// WatchesPatterns reports whether a connection is registered for a
// pattern now.
func (r *registry) WatchesPatterns() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w.HasPatterns()
}

// Changed returns the delivery of c to the connections watching its key
// now, by the key itself or by a pattern it matches: once to each, however
// many of its registrations match.
//
// Most changes have no watcher: finding none allocates nothing.
func (r *registry) Changed(c *store.Change) func() {
	r.mu.Lock()
	if !r.w.Watching(c.Key) {
		r.mu.Unlock()
		return nil
	}
	conns := r.w.Recipients(c.Key, r.keep)
	r.mu.Unlock()
	if len(conns) == 0 {
		return nil
	}
	change := *c
	return func() { r.deliver(&change, conns) }
}

// mayHear reports whether a connection hears of a change through a
// registration: through one for the key, always (it was granted); through
// a pattern, under a policy, only of keys it may read by the grants in
// force now. a is the connection's access.
func mayHear(_ *mqtt.Client, key string, a *access, byPattern bool) bool {
	return !byPattern || a == nil || a.mayReadKey(key)
}

func (r *registry) deliver(c *store.Change, conns []*mqtt.Client) {
	payload := service.NotificationPayload(c)
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
