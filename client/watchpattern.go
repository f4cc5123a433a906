package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dssio/dss/internal/resp"
	"github.com/dssio/dss/internal/wire"
)

// patternSlot is where pattern watches sit in the client's watches, which
// are by key: no key is empty.
const patternSlot = ""

// slots returns where w sits in the client's watches.
func (w *Watch) slots() []string {
	if w.pattern != "" {
		return []string{patternSlot}
	}
	return w.keys
}

// WatchPattern registers for the changes of every key that pattern
// matches (KEYNOTIFY pattern PATTERN, dss's extension of the protocol;
// patterns as in ScanPage) and returns the stream of them: SET and DELETE
// events (expiries included), in the order the server applied them, one
// per change however many watches of the client match. Under a policy
// only keys the client may read are reported.
//
// After a reconnect the watch registers again and reports an OpMissed
// event: changes made meanwhile are not reported. InitialState is not
// supported. Stop it when done.
func (c *Client) WatchPattern(ctx context.Context, pattern string, opts ...WatchOption) (*Watch, error) {
	o := watchOptions{maxPending: DefaultMaxPending}
	for _, opt := range opts {
		opt.applyWatch(&o)
	}
	switch {
	case pattern == "":
		return nil, errors.New("watch: empty pattern")
	case o.initial:
		return nil, errors.New("watch: InitialState is not supported for a pattern")
	}
	w := &Watch{
		c:       c,
		pattern: pattern,
		max:     max(o.maxPending, 1),
		events:  make(chan Event),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
		keyed:   make(map[string]*keySync),
	}
	if err := c.register(w); err != nil {
		return nil, err
	}
	if err := c.patternNotify(ctx, pattern, false); err != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ResyncTimeout)
		defer cancel()
		_ = w.Stop(sctx)
		return nil, fmt.Errorf("watch pattern: %w", err)
	}
	return w, nil
}

// Pattern returns the pattern of a pattern watch, "" for a watch of keys.
func (w *Watch) Pattern() string { return w.pattern }

// patternNotify sends KEYNOTIFY pattern PATTERN, or with STOP.
func (c *Client) patternNotify(ctx context.Context, pattern string, stop bool) error {
	args := [][]byte{[]byte("KEYNOTIFY"), []byte(pattern), []byte("PATTERN")}
	if stop {
		args = append(args, []byte("STOP"))
	}
	res, err := c.call(ctx, &request{payload: resp.AppendArray(nil, args...), readOnly: true})
	if err != nil {
		return fmt.Errorf("keynotify %q pattern: %w", pattern, err)
	}
	switch r := res.reply; {
	case r.Kind == resp.KindSimple && string(r.Text) == "OK":
	case stop && r.Kind == resp.KindInteger && r.Int == 0:
	default:
		return fmt.Errorf("keynotify %q pattern: %w", pattern, unexpected(r))
	}
	return nil
}

// unregisterPatternLocked removes the pattern watch w and returns its
// pattern when no other pattern watch has it.
func (c *Client) unregisterPatternLocked(w *Watch) []string {
	set := c.watches[patternSlot]
	if _, mine := set[w]; !mine {
		return nil
	}
	delete(set, w)
	if len(set) == 0 {
		delete(c.watches, patternSlot)
	}
	for other := range set {
		if other.pattern == w.pattern {
			return nil
		}
	}
	return []string{w.pattern}
}

// appendPatternWatchersLocked appends to ws the pattern watches whose
// pattern matches key.
func (c *Client) appendPatternWatchersLocked(ws []*Watch, key string) []*Watch {
	for w := range c.watches[patternSlot] {
		if wire.MatchPattern(w.pattern, key) {
			ws = append(ws, w)
		}
	}
	return ws
}

// resyncPatterns registers the patterns of the pattern watches again on
// cn and tells each watch that changes may have been missed. It reports
// false when cn has ended.
func (c *Client) resyncPatterns(cn *conn) bool {
	wait := minRetryWait
	for {
		ws := c.watchersOf(patternSlot)
		done := map[string]bool{}
		var err error
		for _, w := range ws {
			if done[w.pattern] {
				continue
			}
			ctx, cancel := context.WithTimeout(cn.ctx, c.cfg.ResyncTimeout)
			err = c.patternNotify(ctx, w.pattern, false)
			cancel()
			if err != nil {
				break
			}
			done[w.pattern] = true
		}
		var se *ServerError
		switch {
		case err == nil:
			for _, w := range ws {
				w.mu.Lock()
				w.enqueueLocked(Event{Op: OpMissed, Resync: true})
				w.mu.Unlock()
			}
			return true
		case cn.ctx.Err() != nil:
			return false
		case errors.As(err, &se) && !errors.Is(err, ErrUnavailable):
			c.log.Warn("pattern watch could not be registered again", "err", err)
			for _, w := range ws {
				w.end(err)
			}
			return true
		}
		select {
		case <-time.After(wait):
		case <-cn.ctx.Done():
			return false
		}
		wait = min(2*wait, maxRetryWait)
	}
}
