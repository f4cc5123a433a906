package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dssio/dss/internal/resp"
)

// keyNotify sends KEYNOTIFY key, or KEYNOTIFY key STOP.
func (c *Client) keyNotify(ctx context.Context, key string, stop bool) error {
	args := [][]byte{[]byte("KEYNOTIFY"), []byte(key)}
	if stop {
		args = append(args, []byte("STOP"))
	}
	res, err := c.call(ctx, &request{payload: resp.AppendArray(nil, args...), readOnly: true})
	if err != nil {
		return err
	}
	switch r := res.reply; {
	case r.Kind == resp.KindSimple && string(r.Text) == "OK":
	case stop && r.Kind == resp.KindInteger && r.Int == 0:
		// Not registered (any more), which is what STOP wants.
	default:
		return unexpected(r)
	}
	return nil
}

// syncKey reads the state of key and delivers it to the watches ws as a
// Resync event, merged with the notifications that arrive meanwhile.
// register sends KEYNOTIFY first.
func (c *Client) syncKey(ctx context.Context, key string, ws []*Watch, register bool) error {
	seqs := make([]uint64, len(ws))
	for i, w := range ws {
		seqs[i] = w.beginSync(key)
	}
	state, err := c.readState(ctx, key, register)
	for i, w := range ws {
		if err != nil {
			w.abortSync(key)
		} else {
			w.endSync(seqs[i], cloneEvent(state, i > 0))
		}
	}
	return err
}

func (c *Client) readState(ctx context.Context, key string, register bool) (Event, error) {
	if register {
		if err := c.keyNotify(ctx, key, false); err != nil {
			return Event{}, fmt.Errorf("keynotify %q: %w", key, err)
		}
	}
	e, found, err := c.Get(ctx, key)
	if err != nil {
		return Event{}, err
	}
	if !found {
		return Event{Key: key, Op: OpDelete, Resync: true}, nil
	}
	return Event{Key: key, Op: OpSet, Value: e.Value, Version: e.Version, Resync: true}, nil
}

func cloneEvent(e Event, copyValue bool) Event {
	if copyValue && e.Value != nil {
		e.Value = append([]byte(nil), e.Value...)
	}
	return e
}

// watchedKeysLocked returns the keys that watches want.
func (c *Client) watchedKeysLocked() []string {
	keys := make([]string, 0, len(c.watches))
	for k := range c.watches {
		keys = append(keys, k)
	}
	return keys
}

// startResync registers keys again on the new connection cn and reports
// each key's current state, in the background.
func (c *Client) startResync(cn *conn, keys []string) {
	if len(keys) == 0 {
		return
	}
	c.goroutine(func() {
		for _, k := range keys {
			if !c.resyncKey(cn, k) {
				return
			}
		}
	})
}

// resyncKey resyncs one key on cn, trying again while cn lasts. It
// reports false when cn has ended: the next connection resyncs anew.
func (c *Client) resyncKey(cn *conn, key string) bool {
	if key == patternSlot {
		return c.resyncPatterns(cn)
	}
	wait := minRetryWait
	for {
		ws := c.watchersOf(key)
		if len(ws) == 0 {
			return true // stopped meanwhile
		}
		ctx, cancel := context.WithTimeout(cn.ctx, c.cfg.ResyncTimeout)
		err := c.syncKey(ctx, key, ws, true)
		cancel()
		var se *ServerError
		switch {
		case err == nil:
			return true
		case cn.ctx.Err() != nil:
			return false
		case errors.As(err, &se) && !errors.Is(err, ErrUnavailable):
			// The server refuses this key now (not authorized, say):
			// its watches cannot go on.
			c.log.Warn("watch could not be registered again", "key", key, "err", err)
			for _, w := range ws {
				w.end(err)
			}
			return true
		}
		c.log.Debug("resync failed; retrying", "key", key, "err", err)
		select {
		case <-time.After(wait):
		case <-cn.ctx.Done():
			return false
		}
		wait = min(2*wait, maxRetryWait)
	}
}

func (c *Client) watchersOf(key string) []*Watch {
	c.mu.Lock()
	defer c.mu.Unlock()
	ws := make([]*Watch, 0, len(c.watches[key]))
	for w := range c.watches[key] {
		ws = append(ws, w)
	}
	if key != patternSlot {
		ws = c.appendPatternWatchersLocked(ws, key)
	}
	return ws
}
