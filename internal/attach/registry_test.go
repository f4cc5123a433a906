package attach

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

type sent struct{ client, key string }

func newTestRegistry(lease time.Duration, clock *fakeClock) (*registry, *[]sent) {
	var out []sent
	r := newRegistry(NewMetrics(), lease, clock.Now, func(client string, key, _ []byte, _ string) {
		out = append(out, sent{client, string(key)})
	})
	return r, &out
}

func keyNotify(r *registry, client, key string, stop bool) *engine.Op {
	op := &engine.Op{Request: wire.Request{Verb: wire.VerbKeyNotify, Key: []byte(key), Stop: stop}, Caller: &call{requester: client}}
	r.KeyNotify(op)
	return op
}

func notifyAll(r *registry, key string) {
	if d := r.Changed(&store.Change{Key: key}); d != nil {
		d()
	}
}

func TestRegistryLease(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	r, out := newTestRegistry(time.Minute, clock)
	keyNotify(r, "a", "k", false)
	keyNotify(r, "b", "k", false)
	clock.Add(40 * time.Second)
	keyNotify(r, "a", "k", false) // renews a's lease
	clock.Add(30 * time.Second)   // b's ended
	notifyAll(r, "k")
	if !slices.Equal(*out, []sent{{"a", "k"}}) {
		t.Fatalf("notified %v, want a alone", *out)
	}
	if n := r.expire(); n != 1 {
		t.Fatalf("%d registrations expired, want 1", n)
	}
	if op := keyNotify(r, "b", "k", true); op.Result.Watched {
		t.Fatal("STOP found b's expired registration")
	}
	clock.Add(time.Minute)
	if n := r.expire(); n != 1 || len(r.Watched()) != 0 {
		t.Fatalf("%d expired, %v watched", n, r.Watched())
	}
}

func TestRegistryDropClient(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	r, out := newTestRegistry(-1, clock)
	keyNotify(r, "a", "k1", false)
	keyNotify(r, "a", "k2", false)
	keyNotify(r, "b", "k1", false)
	clock.Add(1000 * time.Hour)
	if n := r.dropClient("a"); n != 2 {
		t.Fatalf("dropped %d, want 2", n)
	}
	notifyAll(r, "k1")
	notifyAll(r, "k2")
	if !slices.Equal(*out, []sent{{"b", "k1"}}) {
		t.Fatalf("notified %v, want b alone (no lease: registrations last until the client leaves)", *out)
	}
}

func TestRegistryRefusals(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	r, _ := newTestRegistry(time.Minute, clock)
	r.setMaxPerClient(1)
	if op := keyNotify(r, "", "k", false); op.Result.Err != wire.ErrUnknownRequester {
		t.Fatalf("no client id: %v", op.Result.Err)
	}
	keyNotify(r, "a", "k1", false)
	if op := keyNotify(r, "a", "k1", false); op.Result.Err != nil {
		t.Fatalf("registering again: %v", op.Result.Err)
	}
	if op := keyNotify(r, "a", "k2", false); op.Result.Err != wire.ErrQuotaExceeded {
		t.Fatalf("past the bound: %v", op.Result.Err)
	}
	if op := keyNotify(r, "a", "k1", true); !op.Result.Watched {
		t.Fatal("STOP of a registration")
	}
}

func patternNotify(r *registry, client, pattern string, stop bool) *engine.Op {
	op := &engine.Op{Request: wire.Request{Verb: wire.VerbKeyNotify, Key: []byte(pattern), Pattern: true, Stop: stop}, Caller: &call{requester: client}}
	r.KeyNotify(op)
	return op
}

// Pattern registrations: one notification per change per client however
// many of its registrations match, a lease that the same KEYNOTIFY
// renews, dropped with the client, and counted with its keys against the
// bound.
func TestRegistryPatterns(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	r, out := newTestRegistry(time.Minute, clock)
	keyNotify(r, "a", "s/1", false)
	patternNotify(r, "a", "s/*", false)
	patternNotify(r, "a", "*", false)
	patternNotify(r, "b", "s/?", false)
	if !r.WatchesPatterns() {
		t.Fatal("no pattern registration reported")
	}
	notifyAll(r, "s/1")
	notifyAll(r, "other")
	notifyAll(r, "s/\xff") // not UTF-8: no pattern matches it
	slices.SortFunc(*out, func(x, y sent) int { return strings.Compare(x.client+x.key, y.client+y.key) })
	if want := []sent{{"a", "other"}, {"a", "s/1"}, {"b", "s/1"}}; !slices.Equal(*out, want) {
		t.Fatalf("notified %v, want %v", *out, want)
	}

	// a's key registration lapses, its pattern renewed stays: a still
	// hears of s/1, once.
	clock.Add(40 * time.Second)
	patternNotify(r, "a", "s/*", false)
	clock.Add(30 * time.Second)
	*out = nil
	notifyAll(r, "s/1")
	if want := []sent{{"a", "s/1"}}; !slices.Equal(*out, want) {
		t.Fatalf("after the leases: notified %v, want %v", *out, want)
	}
	if n := r.expire(); n != 3 {
		t.Fatalf("%d registrations expired, want 3 (a's key and *, b's s/?)", n)
	}
	if op := patternNotify(r, "b", "s/?", true); op.Result.Watched {
		t.Fatal("STOP found b's expired pattern")
	}
	if op := patternNotify(r, "a", "s/*", true); !op.Result.Watched {
		t.Fatal("STOP did not find a's pattern")
	}
	if r.WatchesPatterns() {
		t.Fatal("a pattern registration left")
	}

	r.setMaxPerClient(2)
	keyNotify(r, "c", "k", false)
	patternNotify(r, "c", "p*", false)
	if op := patternNotify(r, "c", "q*", false); op.Result.Err != wire.ErrQuotaExceeded {
		t.Fatalf("a third registration: %v", op.Result.Err)
	}
	if op := patternNotify(r, "c", "p*", false); op.Result.Err != nil {
		t.Fatalf("renewing at the bound: %v", op.Result.Err)
	}
	if n := r.dropClient("c"); n != 2 || r.WatchesPatterns() {
		t.Fatalf("dropped %d registrations of c, want its key and its pattern", n)
	}
}
