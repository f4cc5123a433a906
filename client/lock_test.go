package client

import (
	"errors"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func TestLockAndRelease(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	a, b := dial(t, s.Addr()), dial(t, s.Addr())

	l, err := a.Lock(ctxT(t), "lock", TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	e, found, err := a.Get(ctxT(t), "lock")
	if err != nil || !found || string(e.Value) != l.Holder() || e.Version != l.Token() {
		t.Fatalf("lock key %q at %v (found %v, %v); want holder %q at token %v", e.Value, e.Version, found, err, l.Holder(), l.Token())
	}
	if _, held, err := b.TryLock(ctxT(t), "lock"); err != nil || held {
		t.Fatalf("second contender: held %v, err %v; want refused", held, err)
	}

	// A waiting contender gets the lock when it is released.
	got := make(chan *Lease, 1)
	go func() {
		l2, err := b.Lock(ctxT(t), "lock", TTL(time.Minute))
		if err != nil {
			t.Error(err)
		}
		got <- l2
	}()
	if err := l.Release(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	l2 := <-got
	if l2 == nil {
		t.FailNow()
	}
	if !l2.Token().After(l.Token()) {
		t.Fatalf("new token %v not after the old %v", l2.Token(), l.Token())
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("released lease not done")
	}
	if l.Err() != nil {
		t.Fatalf("Err after Release: %v", l.Err())
	}
	if err := l.Release(ctxT(t)); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if err := l2.Release(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := a.Get(ctxT(t), "lock"); found {
		t.Fatal("lock key left after Release")
	}
}

// TestLockRenewal holds a lock for longer than its TTL: the renewals keep
// it, and a contender stays out. The TTL leaves a loaded machine time for
// each renewal (one every third of it): with 2 s, a renewal held up for
// 1.3 s under the race detector on a busy machine let the lock expire.
func TestLockRenewal(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	a, b := dial(t, s.Addr()), dial(t, s.Addr())
	const ttl = 6 * time.Second
	w, err := b.Watch(ctxT(t), []string{"lock"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctxT(t))
	l, held, err := a.TryLock(ctxT(t), "lock", TTL(ttl))
	if err != nil || !held {
		t.Fatalf("TryLock: %v %v", held, err)
	}
	acquired := time.Now()
	expectEvent(t, nextEvent(t, w), "lock", OpSet, l.Holder(), false)
	// Each renewal is a SET of the same value.
	for i := 0; i < 2 || time.Since(acquired) <= ttl; i++ {
		expectEvent(t, nextEvent(t, w), "lock", OpSet, l.Holder(), false)
		if _, held, err := b.TryLock(ctxT(t), "lock", TTL(ttl)); err != nil || held {
			t.Fatalf("contender after %d renewals: held %v, err %v", i+1, held, err)
		}
	}
	if _, held, err := b.TryLock(ctxT(t), "lock", TTL(ttl)); err != nil || held {
		t.Fatalf("contender after the TTL: held %v, err %v", held, err)
	}
	if l.Err() != nil {
		t.Fatalf("lease lost: %v", l.Err())
	}
	if err := l.Release(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, nextEvent(t, w), "lock", OpDelete, "", false)
}

// TestLockExpiresWithItsHolder lets the holder vanish without releasing:
// the contender gets the lock once the TTL runs out.
func TestLockExpiresWithItsHolder(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	a, b := dial(t, s.Addr()), dial(t, s.Addr())
	l, err := a.Lock(ctxT(t), "lock", TTL(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	<-l.Done()
	if !errors.Is(l.Err(), ErrLeaseLost) || !errors.Is(l.Err(), ErrClosed) {
		t.Fatalf("Err of a closed client's lease: %v", l.Err())
	}
	l2, err := b.Lock(ctxT(t), "lock", TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctxT(t))
	if !l2.Token().After(l.Token()) {
		t.Fatalf("token %v not after the expired holder's %v", l2.Token(), l.Token())
	}
}

// TestFencingRefusesStaleHolder is the reason for fencing tokens: a holder
// that stalled past its TTL writes with its old token after a new holder
// took over, and the server refuses it.
func TestFencingRefusesStaleHolder(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	a, b := dial(t, s.Addr()), dial(t, s.Addr())
	la, err := a.Lock(ctxT(t), "lock", TTL(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	stale := la.Token()
	mustSet(t, a, "resource", "from a", FencingToken(stale))
	_ = a.Close() // a stalls: no more renewals

	lb, err := b.Lock(ctxT(t), "lock", TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctxT(t))
	mustSet(t, b, "resource", "from b", FencingToken(lb.Token()))

	// a wakes up and writes with the token it still has.
	a2 := dial(t, s.Addr())
	if _, err := a2.Set(ctxT(t), "resource", []byte("stale"), FencingToken(stale)); !errors.Is(err, ErrFencingTokenLowerVersion) {
		t.Fatalf("stale holder's write: %v, want ErrFencingTokenLowerVersion", err)
	}
	if _, err := a2.Del(ctxT(t), "resource", FencingToken(stale)); !errors.Is(err, ErrFencingTokenLowerVersion) {
		t.Fatalf("stale holder's delete: %v, want ErrFencingTokenLowerVersion", err)
	}
	if e, _, _ := b.Get(ctxT(t), "resource"); string(e.Value) != "from b" {
		t.Fatalf("resource %q, want the new holder's write", e.Value)
	}
}

// TestLeaseLostToAnotherHolder takes the lock key away behind the holder's
// back: the next renewal finds out.
func TestLeaseLostToAnotherHolder(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	a, b := dial(t, s.Addr()), dial(t, s.Addr())
	l, err := a.Lock(ctxT(t), "lock", TTL(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, b, "lock", "usurper", TTL(time.Minute))
	select {
	case <-l.Done():
	case <-time.After(dsstest.Timeout):
		t.Fatal("lease not lost")
	}
	if !errors.Is(l.Err(), ErrLeaseLost) {
		t.Fatalf("Err %v, want ErrLeaseLost", l.Err())
	}
	if err := l.Release(ctxT(t)); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Release of a lost lease: %v", err)
	}
	if e, _, _ := b.Get(ctxT(t), "lock"); string(e.Value) != "usurper" {
		t.Fatalf("Release deleted another holder's lock: %q", e.Value)
	}
}

func TestLockGivesUpWithContext(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	a, b := dial(t, s.Addr()), dial(t, s.Addr())
	l, err := a.Lock(ctxT(t), "lock", TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctxT(t))
	ctx, cancel := contextWithTimeout(t, 100)
	defer cancel()
	if _, err := b.Lock(ctx, "lock"); !errors.Is(err, ctx.Err()) || ctx.Err() == nil {
		t.Fatalf("Lock of a held lock: %v", err)
	}
	if _, _, err := b.TryLock(ctxT(t), "lock", TTL(0)); err == nil {
		t.Fatal("TTL of zero accepted")
	}
}
