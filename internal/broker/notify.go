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
	// maxPerConn bounds the registrations of one connection; 0: none.
	maxPerConn int

	mu     sync.Mutex
	byKey  map[string]map[*mqtt.Client]struct{} // guarded by mu
	byConn map[*mqtt.Client]map[string]struct{} // guarded by mu
}

var _ engine.Notifier = (*registry)(nil)

func newRegistry(m *Metrics, send func(*mqtt.Client, *packets.Packet)) *registry {
	return &registry{
		metrics: m,
		send:    send,
		byKey:   make(map[string]map[*mqtt.Client]struct{}),
		byConn:  make(map[*mqtt.Client]map[string]struct{}),
	}
}

// KeyNotify registers or unregisters the calling connection.
func (r *registry) KeyNotify(op *engine.Op) {
	cl := op.Caller.(*call).client
	key := string(op.Request.Key)
	r.mu.Lock()
	defer r.mu.Unlock()
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
	if r.maxPerConn > 0 && len(keys) >= r.maxPerConn {
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

// Changed returns the delivery of c to the connections watching its key
// now.
func (r *registry) Changed(c *store.Change) func() {
	r.mu.Lock()
	watchers := r.byKey[c.Key]
	if len(watchers) == 0 {
		r.mu.Unlock()
		return nil
	}
	conns := make([]*mqtt.Client, 0, len(watchers))
	for cl := range watchers {
		conns = append(conns, cl)
	}
	r.mu.Unlock()
	change := *c
	return func() { r.deliver(&change, conns) }
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
