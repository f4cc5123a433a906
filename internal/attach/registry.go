package attach

import (
	"sync"
	"time"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// registry holds the KEYNOTIFY registrations of the clients of the broker
// dss is attached to, by client id: dss sees no connections, only the id a
// request names. A registration ends with STOP, when the broker says its
// client left or connected anew (presence), or at the end of its lease,
// which KEYNOTIFY renews.
type registry struct {
	metrics *Metrics
	// send publishes a notification for the client id.
	send func(clientID string, key []byte, payload []byte, version string)
	// lease is how long a registration lasts unless renewed; negative:
	// until the client leaves.
	lease time.Duration
	now   func() time.Time
	// maxPerClient bounds the registrations of one client id; 0: none.
	maxPerClient int

	mu       sync.Mutex
	byKey    map[string]map[string]time.Time // guarded by mu; key → client id → end of lease
	byClient map[string]map[string]struct{}  // guarded by mu; client id → keys
}

var _ engine.Notifier = (*registry)(nil)

func newRegistry(m *Metrics, lease time.Duration, now func() time.Time, send func(string, []byte, []byte, string)) *registry {
	return &registry{
		metrics:  m,
		send:     send,
		lease:    lease,
		now:      now,
		byKey:    make(map[string]map[string]time.Time),
		byClient: make(map[string]map[string]struct{}),
	}
}

// until returns the end of a lease that starts now.
func (r *registry) until(now time.Time) time.Time {
	if r.lease < 0 {
		return time.Time{} // never
	}
	return now.Add(r.lease)
}

func expired(end, now time.Time) bool { return !end.IsZero() && !now.Before(end) }

// KeyNotify registers, renews or unregisters the requester of op.
func (r *registry) KeyNotify(op *engine.Op) {
	client := op.Caller.(*call).requester
	key := string(op.Request.Key)
	if !mayNotify(client) {
		op.Result.Err = wire.ErrUnknownRequester
		return
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if op.Request.Stop {
		end, ok := r.byKey[key][client]
		op.Result.Watched = ok && !expired(end, now)
		r.removeLocked(client, key)
		return
	}
	watchers := r.byKey[key]
	if _, ok := watchers[client]; ok {
		watchers[client] = r.until(now)
		return
	}
	keys := r.byClient[client]
	if r.maxPerClient > 0 && len(keys) >= r.maxPerClient {
		op.Result.Err = wire.ErrQuotaExceeded
		return
	}
	if wire.NotifyTopicLen(len(client), len(key)) > wire.MaxTopicLen {
		op.Result.Err = wire.ErrKeyTooLong
		return
	}
	if watchers == nil {
		watchers = make(map[string]time.Time)
		r.byKey[key] = watchers
	}
	watchers[client] = r.until(now)
	if keys == nil {
		keys = make(map[string]struct{})
		r.byClient[client] = keys
	}
	keys[key] = struct{}{}
	r.metrics.Watches.Inc()
}

func (r *registry) removeLocked(client, key string) bool {
	watchers := r.byKey[key]
	if _, ok := watchers[client]; !ok {
		return false
	}
	delete(watchers, client)
	if len(watchers) == 0 {
		delete(r.byKey, key)
	}
	delete(r.byClient[client], key)
	if len(r.byClient[client]) == 0 {
		delete(r.byClient, client)
	}
	r.metrics.Watches.Dec()
	return true
}

// dropClient removes every registration of a client that left.
func (r *registry) dropClient(client string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for key := range r.byClient[client] {
		if r.removeLocked(client, key) {
			n++
		}
	}
	return n
}

// expire removes the registrations whose lease ended, and returns how
// many.
func (r *registry) expire() int {
	if r.lease < 0 {
		return 0
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for key, watchers := range r.byKey {
		for client, end := range watchers {
			if expired(end, now) && r.removeLocked(client, key) {
				n++
			}
		}
	}
	return n
}

// clientsOf returns the client ids registered for key, for tests.
func (r *registry) clientsOf(key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for c := range r.byKey[key] {
		out = append(out, c)
	}
	return out
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

// Changed returns the delivery of c to the clients registered for its key
// now (whose lease has not ended).
func (r *registry) Changed(c *store.Change) func() {
	now := r.now()
	r.mu.Lock()
	watchers := r.byKey[c.Key]
	if len(watchers) == 0 {
		r.mu.Unlock()
		return nil
	}
	clients := make([]string, 0, len(watchers))
	for client, end := range watchers {
		if !expired(end, now) {
			clients = append(clients, client)
		}
	}
	r.mu.Unlock()
	if len(clients) == 0 {
		return nil
	}
	change := *c
	return func() {
		payload := service.NotificationPayload(&change)
		version := change.Version.String()
		key := []byte(change.Key)
		for _, client := range clients {
			r.send(client, key, payload, version)
			r.metrics.Notifications.Inc()
		}
	}
}
