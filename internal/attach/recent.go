package attach

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/wire"
)

// recent remembers the requests of the last window by requester, correlation
// data and content, so that a request that arrives again is carried out
// once: the broker redelivers a QoS 1 request that dss had not
// acknowledged when its connection ended, and a client may send a request
// again, with the same correlation data, when its answer did not come.
//
// A cluster remembers the writes it applied in its replicated state as
// well (package cluster), which covers a request that reaches another
// instance the second time; recent covers one instance, reads and
// KEYNOTIFY included, and the single node. It lives in memory: a request
// redelivered to a single node that restarted between applying it and
// acknowledging it is applied again (docs/attach.md).
type recent struct {
	window time.Duration
	max    int
	now    func() time.Time
	seed   maphash.Seed

	mu    sync.Mutex
	byKey map[requestKey]*entry // guarded by mu
	order []orderRef            // guarded by mu; in order of arrival
	head  int                   // guarded by mu
}

// requestKey identifies a request: who sent it (its client id, or its
// response topic when it names none), its correlation data, and a digest
// of what it asks.
type requestKey struct {
	requester   string
	correlation string
	digest      uint64
}

type orderRef struct {
	key requestKey
	at  time.Time
}

// entry is a request being carried out or answered.
type entry struct {
	at   time.Time
	done bool
	// kept is set when the response is kept to answer a retry: that of a
	// write, which must not be carried out again.
	kept    bool
	payload []byte
	props   []service.Property
}

// maxRecent bounds the requests remembered, whatever the window: past it
// the oldest are forgotten first.
const maxRecent = 1 << 20

func newRecent(window time.Duration, now func() time.Time) *recent {
	return &recent{window: window, max: maxRecent, now: now, seed: maphash.MakeSeed(), byKey: make(map[requestKey]*entry)}
}

// keyOf returns the key of a request.
func (r *recent) keyOf(requester string, correlation, payload []byte, env *service.Envelope) requestKey {
	var h maphash.Hash
	h.SetSeed(r.seed)
	_, _ = h.Write(payload)
	for _, s := range []string{env.Timestamp, env.FencingToken, env.Version} {
		_ = h.WriteByte(0)
		_, _ = h.WriteString(s)
	}
	flags := byte(0)
	if env.HasTimestamp {
		flags |= 1
	}
	if env.HasFencingToken {
		flags |= 2
	}
	if env.Persist {
		flags |= 4
	}
	if env.Stale {
		flags |= 8
	}
	if env.WithTTL {
		flags |= 16
	}
	_ = h.WriteByte(flags)
	return requestKey{requester: requester, correlation: string(correlation), digest: h.Sum64()}
}

// begin records the arrival of the request k. When the same request
// arrived within the window, it returns what became of it (a copy) and
// records nothing.
func (r *recent) begin(k requestKey) (earlier entry, seen bool) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneLocked(now)
	if e, ok := r.byKey[k]; ok {
		return *e, true
	}
	r.byKey[k] = &entry{at: now}
	r.order = append(r.order, orderRef{key: k, at: now})
	return entry{}, false
}

// finish records the response to the request k. A write's response is
// kept for a retry; a response that says to try again (busy,
// unavailable) forgets the request, so that a retry is carried out.
func (r *recent) finish(k requestKey, verb wire.Verb, err *wire.Error, payload []byte, props []service.Property) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byKey[k]
	if !ok {
		return
	}
	if err == wire.ErrBusy || err == wire.ErrUnavailable {
		delete(r.byKey, k)
		return
	}
	e.done = true
	switch verb {
	case wire.VerbSet, wire.VerbDel, wire.VerbVDel:
		e.kept, e.payload, e.props = true, payload, props
	}
}

// forget drops the request k: it is to be carried out again when it comes.
func (r *recent) forget(k requestKey) {
	r.mu.Lock()
	delete(r.byKey, k)
	r.mu.Unlock()
}

func (r *recent) pruneLocked(now time.Time) {
	limit := now.Add(-r.window)
	for r.head < len(r.order) {
		ref := r.order[r.head]
		if !ref.at.Before(limit) && len(r.order)-r.head <= r.max {
			break
		}
		if e, ok := r.byKey[ref.key]; ok && e.at.Equal(ref.at) {
			delete(r.byKey, ref.key)
		}
		r.order[r.head] = orderRef{}
		r.head++
	}
	if r.head > 1024 && r.head > len(r.order)/2 {
		r.order = append(r.order[:0:0], r.order[r.head:]...)
		r.head = 0
	}
}

func (r *recent) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byKey)
}
