package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dssio/dss/hlc"
)

// DefaultLockTTL is the time to live of a lease unless TTL says otherwise.
const DefaultLockTTL = 10 * time.Second

type lockOptions struct {
	ttl    time.Duration
	holder string
}

// Holder is the value a lease stores under the lock's key, naming its
// holder. Default: the client id and random digits, unique per lease. Two
// leases with the same holder value count as one holder.
type Holder string

func (h Holder) applyLock(o *lockOptions) { o.holder = string(h) }

// Lease is a held lock: the key name holds the holder's value with a TTL,
// renewed in the background until Release. Its Token is the fencing token
// that protects other keys against holders whose lease ran out.
type Lease struct {
	c      *Client
	name   string
	holder []byte
	ttl    time.Duration
	token  hlc.Timestamp
	// deadline is when the lock expires unless renewed; only the
	// renewer touches it after TryLock.
	deadline time.Time

	ctx     context.Context // ends at Release or Client.Close
	cancel  context.CancelFunc
	renewed chan struct{} // closed when the renewer returns
	done    chan struct{} // closed when the lease ends

	mu    sync.Mutex
	ended bool  // guarded by mu
	err   error // guarded by mu
}

// TryLock takes the lock name if it is free (SET name holder NEX PX ttl)
// and returns the lease, renewed in the background until Release. held is
// false, with no error, when another holder has it.
func (c *Client) TryLock(ctx context.Context, name string, opts ...LockOption) (l *Lease, held bool, err error) {
	o := lockOptions{ttl: DefaultLockTTL}
	for _, opt := range opts {
		opt.applyLock(&o)
	}
	if o.ttl < time.Millisecond {
		return nil, false, fmt.Errorf("lock %q: TTL %v is below a millisecond", name, o.ttl)
	}
	if o.holder == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.holder = c.cfg.ClientID + "/" + hex.EncodeToString(b[:])
	}
	sent := time.Now()
	res, err := c.Set(ctx, name, []byte(o.holder), IfMissingOrEqual, TTL(o.ttl))
	if err != nil {
		return nil, false, fmt.Errorf("lock %q: %w", name, err)
	}
	if !res.Applied {
		return nil, false, nil
	}
	l = &Lease{
		c:        c,
		name:     name,
		holder:   []byte(o.holder),
		ttl:      o.ttl,
		token:    res.Version,
		deadline: sent.Add(o.ttl),
		renewed:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	l.ctx, l.cancel = context.WithCancel(c.ctx)
	if !c.goroutine(l.renew) {
		l.cancel()
		return nil, false, ErrClosed
	}
	return l, true, nil
}

// Lock takes the lock name, waiting as long as ctx allows for the current
// holder to release it or for its lease to expire.
func (c *Client) Lock(ctx context.Context, name string, opts ...LockOption) (*Lease, error) {
	o := lockOptions{ttl: DefaultLockTTL}
	for _, opt := range opts {
		opt.applyLock(&o)
	}
	// Watch before trying, so that a release right after a failed try
	// is not missed.
	w, err := c.Watch(ctx, []string{name})
	if err != nil {
		return nil, fmt.Errorf("lock %q: %w", name, err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ResyncTimeout)
		defer cancel()
		_ = w.Stop(sctx)
	}()
	// Notifications can be lost with a connection, and resyncs report
	// them; polling at the TTL is the last resort.
	poll := max(o.ttl, 50*time.Millisecond)
	for {
		l, held, err := c.TryLock(ctx, name, opts...)
		if err != nil || held {
			return l, err
		}
		if err := awaitRelease(ctx, w, poll); err != nil {
			return nil, fmt.Errorf("lock %q: %w", name, err)
		}
	}
}

// awaitRelease waits until the watched lock key is deleted or expires, its
// state is read again after a reconnect, or poll passes. The renewals of
// the current holder do not end the wait.
func awaitRelease(ctx context.Context, w *Watch, poll time.Duration) error {
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for {
		select {
		case e, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
			if e.Op == OpDelete || e.Resync {
				return nil
			}
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Name returns the lock's key.
func (l *Lease) Name() string { return l.name }

// Holder returns the value stored under the lock's key.
func (l *Lease) Holder() string { return string(l.holder) }

// Token returns the fencing token: the version the lock's key got when the
// lease was taken. Pass it as a FencingToken to writes that the lock
// protects; the server refuses them once a later holder has written with
// its newer token.
func (l *Lease) Token() hlc.Timestamp { return l.token }

// Done is closed when the lease has ended: released, or lost (see Err).
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err returns nil while the lease is held or after a clean Release, and an
// error wrapping ErrLeaseLost once it was lost: the lock expired before it
// could be renewed, another holder has it, or the client was closed
// (ErrClosed too).
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Release stops the renewal and deletes the lock's key if it still holds
// this lease's value (VDEL). It returns an error wrapping ErrLeaseLost if
// the lease had been lost before. Release is idempotent.
func (l *Lease) Release(ctx context.Context) error {
	l.cancel()
	<-l.renewed
	l.mu.Lock()
	ended, lost := l.ended, l.err
	l.mu.Unlock()
	if ended {
		return lost
	}
	res, err := l.c.VDel(ctx, l.name, l.holder)
	switch {
	case err != nil:
		// The key expires after its TTL anyway.
		l.finish(nil)
		return fmt.Errorf("release %q: %w", l.name, err)
	case !res.Deleted:
		err = fmt.Errorf("release %q: %w: the lock had expired or passed to another holder", l.name, ErrLeaseLost)
		l.finish(err)
		return err
	}
	l.finish(nil)
	return nil
}

// finish ends the lease with err (nil: released).
func (l *Lease) finish(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.ended, l.err = true, err
	close(l.done)
}

// renew keeps the lease alive: it sets the key again (NEX, with the TTL)
// every third of the TTL, and retries failures while the lease lasts. It
// ends the lease when the key turns out to be someone else's or the TTL
// passed without a renewal.
func (l *Lease) renew() {
	defer close(l.renewed)
	interval := l.ttl / 3
	next := interval
	for {
		select {
		case <-time.After(next):
		case <-l.ctx.Done():
			if l.c.ctx.Err() != nil {
				l.finish(fmt.Errorf("%w: %w", ErrLeaseLost, ErrClosed))
			}
			return
		}
		sent := time.Now()
		if !sent.Before(l.deadline) {
			l.finish(fmt.Errorf("%w: %q was not renewed within its TTL", ErrLeaseLost, l.name))
			return
		}
		ctx, cancel := context.WithDeadline(l.ctx, l.deadline)
		res, err := l.c.Set(ctx, l.name, l.holder, IfMissingOrEqual, TTL(l.ttl))
		cancel()
		switch {
		case l.ctx.Err() != nil:
			continue // released or closed: the select above says which
		case err == nil && res.Applied:
			l.deadline = sent.Add(l.ttl)
			next = interval
		case err == nil:
			l.finish(fmt.Errorf("%w: %q is held by another holder", ErrLeaseLost, l.name))
			return
		case errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(l.deadline):
			l.finish(fmt.Errorf("%w: %q was not renewed within its TTL: %w", ErrLeaseLost, l.name, err))
			return
		default:
			// A transient failure (a reconnect, say): try again soon,
			// within the time the lease has left.
			l.c.log.Debug("lease renewal failed", "lock", l.name, "err", err)
			next = min(interval, 50*time.Millisecond)
		}
	}
}
