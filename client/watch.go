package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dssio/dss/hlc"
)

// Op is the kind of an Event.
type Op uint8

// The kinds of Event.
const (
	// OpSet: the key holds Event.Value.
	OpSet Op = iota + 1
	// OpDelete: the key was deleted, expired, or (for a Resync event)
	// does not exist.
	OpDelete
	// OpMissed, in a pattern watch (WatchPattern), marks a new connection
	// on which the pattern was registered again: changes made while the
	// client was not connected were not reported. Its Key is empty and
	// Resync is set. List the keys (Keys) to catch up.
	OpMissed
)

// String returns the protocol's name of the operation: SET or DELETE.
func (o Op) String() string {
	switch o {
	case OpSet:
		return "SET"
	case OpDelete:
		return "DELETE"
	case OpMissed:
		return "MISSED"
	}
	return "UNKNOWN"
}

// Event is a change of a watched key, or the key's current state.
type Event struct {
	Key string
	Op  Op
	// Value is the new value, for OpSet.
	Value []byte
	// Version is the version of the change or state. It is zero for the
	// state of a missing key, which has no version.
	Version hlc.Timestamp
	// Resync marks the key's current state, read right after the watch
	// was registered (with InitialState) or registered again on a new
	// connection, rather than a notified change. Changes made while the
	// client was not connected are not reported one by one; the Resync
	// event shows where they led.
	Resync bool
}

// DefaultMaxPending is how many undelivered events a Watch holds before it
// ends with ErrWatchOverflow, unless MaxPending says otherwise.
const DefaultMaxPending = 1 << 16

type watchOptions struct {
	initial    bool
	maxPending int
}

type initialState struct{}

func (initialState) applyWatch(o *watchOptions) { o.initial = true }

// InitialState makes Watch report each key's current state (a Resync
// event) before any change.
var InitialState WatchOption = initialState{}

// MaxPending bounds the events a Watch holds for a reader that falls
// behind; past it the watch ends with ErrWatchOverflow rather than drop an
// event silently. Default DefaultMaxPending.
type MaxPending int

func (n MaxPending) applyWatch(o *watchOptions) { o.maxPending = int(n) }

// Watch is a stream of the changes of some keys (KEYNOTIFY). It stays
// registered across reconnects: on every new connection it registers
// again and reports each key's current state as a Resync event, so that
// no change goes unnoticed. Stop it when done.
type Watch struct {
	c    *Client
	keys []string
	// pattern is the pattern of a pattern watch (WatchPattern), which
	// sits in the client's watches under patternSlot; keys is empty.
	pattern string
	max     int
	events  chan Event
	wake    chan struct{} // the queue got an event; capacity 1
	done    chan struct{} // closed when the watch ends
	exited  chan struct{} // closed when the pump has closed events

	mu    sync.Mutex
	queue []Event             // guarded by mu; not yet delivered
	keyed map[string]*keySync // guarded by mu
	err   error               // guarded by mu; why the watch ended
	ended bool                // guarded by mu
}

// Watch registers for the changes of keys and returns the stream of
// them. It returns when every key is registered; with InitialState, once
// each key's current state is queued as the first event for that key.
func (c *Client) Watch(ctx context.Context, keys []string, opts ...WatchOption) (*Watch, error) {
	o := watchOptions{maxPending: DefaultMaxPending}
	for _, opt := range opts {
		opt.applyWatch(&o)
	}
	if len(keys) == 0 {
		return nil, errors.New("watch: no key")
	}
	w := &Watch{
		c:      c,
		max:    max(o.maxPending, 1),
		events: make(chan Event),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		keyed:  make(map[string]*keySync),
	}
	for _, k := range keys {
		if _, dup := w.keyed[k]; !dup {
			w.keyed[k] = &keySync{}
			w.keys = append(w.keys, k)
		}
	}
	if err := c.register(w); err != nil {
		return nil, err
	}
	var err error
	if o.initial {
		for _, k := range w.keys {
			if err = c.syncKey(ctx, k, []*Watch{w}, true); err != nil {
				break
			}
		}
	} else {
		for _, k := range w.keys {
			if err = c.keyNotify(ctx, k, false); err != nil {
				err = fmt.Errorf("keynotify %q: %w", k, err)
				break
			}
		}
	}
	if err != nil {
		// Undo what was registered, even if ctx is what failed.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ResyncTimeout)
		defer cancel()
		_ = w.Stop(sctx)
		return nil, fmt.Errorf("watch: %w", err)
	}
	return w, nil
}

// register adds w to the client's watches and starts its pump.
func (c *Client) register(w *Watch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	for _, k := range w.slots() {
		set := c.watches[k]
		if set == nil {
			set = make(map[*Watch]struct{})
			c.watches[k] = set
		}
		set[w] = struct{}{}
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		w.pump()
	}()
	return nil
}

// unregister removes w from the client's watches and returns the keys
// that no watch wants any more (for a pattern watch, its pattern when no
// other pattern watch has it).
func (c *Client) unregister(w *Watch) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.pattern != "" {
		return c.unregisterPatternLocked(w)
	}
	var orphans []string
	for _, k := range w.keys {
		set, ok := c.watches[k]
		if !ok {
			continue
		}
		if _, mine := set[w]; !mine {
			continue
		}
		delete(set, w)
		if len(set) == 0 {
			delete(c.watches, k)
			orphans = append(orphans, k)
		}
	}
	return orphans
}

// Keys returns the watched keys.
func (w *Watch) Keys() []string { return append([]string(nil), w.keys...) }

// Events returns the stream of events. It is closed when the watch ends:
// after Stop, when the client is closed, or on an error (see Err).
func (w *Watch) Events() <-chan Event { return w.events }

// Done is closed when the watch has ended.
func (w *Watch) Done() <-chan struct{} { return w.done }

// Err returns why the watch ended: nil after Stop, ErrClosed,
// ErrWatchOverflow, or the server's error when registering again failed
// (for example ErrNotAuthorized). It is nil while the watch runs.
func (w *Watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch, closes Events and unregisters (KEYNOTIFY STOP) the
// keys that no other watch of the client wants. ctx bounds the
// unregistration; the watch ends in any case. Stop is idempotent.
func (w *Watch) Stop(ctx context.Context) error {
	w.end(nil)
	<-w.exited
	var errs []error
	for _, k := range w.c.unregister(w) {
		var err error
		if w.pattern != "" {
			err = w.c.patternNotify(ctx, k, true)
		} else {
			err = w.c.keyNotify(ctx, k, true)
		}
		if err != nil && !isClosed(err) {
			errs = append(errs, fmt.Errorf("keynotify %q stop: %w", k, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("watch stop: %w", errors.Join(errs...))
	}
	return nil
}

// end ends the watch with err, unless it has ended already.
func (w *Watch) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.endLocked(err)
}

func (w *Watch) endLocked(err error) {
	if w.ended {
		return
	}
	w.ended, w.err, w.queue = true, err, nil
	close(w.done)
}

// pump hands the queued events to the reader, in order, until the watch
// ends. It runs on its own goroutine, so that a slow reader never holds up
// the connection.
func (w *Watch) pump() {
	defer close(w.exited)
	defer close(w.events)
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, e := range batch {
			select {
			case w.events <- e:
			case <-w.done:
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-w.wake:
		case <-w.done:
			return
		}
	}
}

// enqueueLocked queues e for the reader.
func (w *Watch) enqueueLocked(e Event) {
	if w.ended {
		return
	}
	if len(w.queue) >= w.max {
		w.endLocked(ErrWatchOverflow)
		return
	}
	w.queue = append(w.queue, e)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
