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
// dss is attached to, for keys and for patterns of keys (KEYNOTIFY
// pattern PATTERN), by client id: dss sees no connections, only the id a
// request names. A registration ends with STOP, when the broker says its
// client left or connected anew (presence), or at the end of its lease,
// which the same KEYNOTIFY renews.
type registry struct {
	metrics *Metrics
	// send publishes a notification for the client id.
	send func(clientID string, key []byte, payload []byte, version string)
	// lease is how long a registration lasts unless renewed; negative:
	// until the client leaves.
	lease time.Duration
	now   func() time.Time

	mu sync.Mutex
	// w holds the registrations, each with the end of its lease (zero:
	// none); guarded by mu.
	w *service.Watches[string, time.Time]
}

var _ engine.Notifier = (*registry)(nil)

func newRegistry(m *Metrics, lease time.Duration, now func() time.Time, send func(string, []byte, []byte, string)) *registry {
	return &registry{
		metrics: m,
		send:    send,
		lease:   lease,
		now:     now,
		w:       service.NewWatches[string, time.Time](),
	}
}

// setMaxPerClient bounds the registrations of one client id, for keys
// and patterns together; 0: no bound.
func (r *registry) setMaxPerClient(n int) {
	r.mu.Lock()
	r.w.MaxPer = n
	r.mu.Unlock()
}

// until returns the end of a lease that starts now.
func (r *registry) until(now time.Time) time.Time {
	if r.lease < 0 {
		return time.Time{} // never
	}
	return now.Add(r.lease)
}

func expired(end, now time.Time) bool { return !end.IsZero() && !now.Before(end) }

// KeyNotify registers, renews or unregisters the requester of op, for a
// key or a pattern.
func (r *registry) KeyNotify(op *engine.Op) {
	client := op.Caller.(*call).requester
	key, pattern := string(op.Request.Key), op.Request.Pattern
	if !mayNotify(client) {
		op.Result.Err = wire.ErrUnknownRequester
		return
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if op.Request.Stop {
		end, ok := r.w.Remove(client, key, pattern)
		op.Result.Watched = ok && !expired(end, now)
		if ok {
			r.metrics.Watches.Dec()
		}
		return
	}
	added, err := r.w.Add(client, len(client), key, pattern, r.until(now))
	if err != nil {
		op.Result.Err = err
		return
	}
	if added {
		r.metrics.Watches.Inc()
	}
}

// dropClient removes every registration of a client that left, and
// returns how many it had.
func (r *registry) dropClient(client string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.w.Drop(client)
	r.metrics.Watches.Sub(float64(n))
	return n
}

// expire removes the registrations whose lease ended, and returns how
// many.
func (r *registry) expire() int {
	if r.lease < 0 {
		return 0
	}
	type registration struct {
		client, key string
		pattern     bool
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var ended []registration
	r.w.Each(func(client, key string, pattern bool, end time.Time) {
		if expired(end, now) {
			ended = append(ended, registration{client, key, pattern})
		}
	})
	for _, e := range ended {
		r.w.Remove(e.client, e.key, e.pattern)
	}
	r.metrics.Watches.Sub(float64(len(ended)))
	return len(ended)
}

// Watched returns the keys that have a watcher.
func (r *registry) Watched() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w.Keys()
}

// WatchesPatterns reports whether a client is registered for a pattern
// now.
func (r *registry) WatchesPatterns() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w.HasPatterns()
}

// Changed returns the delivery of c to the clients registered for its key
// or for a pattern it matches, whose lease has not ended: once to each,
// however many of its registrations match.
func (r *registry) Changed(c *store.Change) func() {
	now := r.now()
	r.mu.Lock()
	if !r.w.Watching(c.Key) {
		r.mu.Unlock()
		return nil
	}
	clients := r.w.Recipients(c.Key, func(_, _ string, end time.Time, _ bool) bool { return !expired(end, now) })
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
			if wire.NotifyTopicLen(len(client), len(key)) > wire.MaxTopicLen {
				// Only a pattern's key can make a topic MQTT cannot
				// carry: a registration for the key itself is refused.
				continue
			}
			r.send(client, key, payload, version)
			r.metrics.Notifications.Inc()
		}
	}
}
