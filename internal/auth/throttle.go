package auth

import (
	"context"
	"sync"
	"time"
)

// Throttle slows logins from an address that failed recently: after a
// failure, the address's logins are taken one at a time, and each
// failure is answered only after a delay that doubles with every failure
// in a row (Base, 2×Base, ... up to Max). A success, or Forget without
// failures, clears the address. Safe for concurrent use.
type Throttle struct {
	Base, Max time.Duration
	// Forget is how long an address's failures are remembered.
	Forget time.Duration

	mu    sync.Mutex
	addrs map[string]*addrFailures // guarded by mu
}

type addrFailures struct {
	n    int       // guarded by Throttle.mu
	last time.Time // guarded by Throttle.mu
	// turn is held by the login of the address in progress.
	turn chan struct{}
}

// maxTracked bounds the addresses remembered; past it, the oldest are
// forgotten first.
const maxTracked = 1 << 16

// NewThrottle returns a Throttle with delays from base to max.
func NewThrottle(base, max time.Duration) *Throttle {
	return &Throttle{Base: base, Max: max, Forget: 10 * time.Minute, addrs: make(map[string]*addrFailures)}
}

// Admit waits until a login from remote may be checked, and returns the
// function to call with its outcome. For a failure that function waits
// the delay before it returns, and the caller answers after it.
func (t *Throttle) Admit(ctx context.Context, remote string) (done func(failed bool), err error) {
	addr := remoteHost(remote)
	t.mu.Lock()
	f := t.addrs[addr]
	if f != nil && time.Since(f.last) > t.Forget {
		delete(t.addrs, addr)
		f = nil
	}
	t.mu.Unlock()
	if f == nil {
		return func(failed bool) {
			if failed {
				t.failed(ctx, addr)
			}
		}, nil
	}
	select {
	case f.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return func(failed bool) {
		if failed {
			t.failed(ctx, addr)
		} else {
			t.mu.Lock()
			if t.addrs[addr] == f {
				delete(t.addrs, addr)
			}
			t.mu.Unlock()
		}
		<-f.turn
	}, nil
}

// failed counts a failure of addr and waits its delay.
func (t *Throttle) failed(ctx context.Context, addr string) {
	t.mu.Lock()
	f := t.addrs[addr]
	if f == nil {
		if len(t.addrs) >= maxTracked {
			t.forgetOldestLocked()
		}
		f = &addrFailures{turn: make(chan struct{}, 1)}
		t.addrs[addr] = f
	}
	f.n++
	f.last = time.Now()
	d := t.Base
	for i := 1; i < f.n && d < t.Max; i++ {
		d *= 2
	}
	d = min(d, t.Max)
	t.mu.Unlock()
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// Failures returns the failures in a row remembered for remote's address.
func (t *Throttle) Failures(remote string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.addrs[remoteHost(remote)]; f != nil {
		return f.n
	}
	return 0
}

func (t *Throttle) forgetOldestLocked() {
	cutoff := time.Now().Add(-t.Forget)
	for a, f := range t.addrs {
		if f.last.Before(cutoff) {
			delete(t.addrs, a)
		}
	}
	for a := range t.addrs {
		if len(t.addrs) < maxTracked {
			return
		}
		delete(t.addrs, a)
	}
}
