package client

import (
	"context"
	"time"
)

// startRenewal registers the watched keys and patterns again every
// WatchRenewal while cn lasts: a server attached to another broker (dss
// attach) cannot see the client's connection, and ends a registration
// that is not renewed within its lease.
func (c *Client) startRenewal(cn *conn) {
	if c.cfg.WatchRenewal < 0 {
		return
	}
	c.goroutine(func() {
		t := time.NewTicker(c.cfg.WatchRenewal)
		defer t.Stop()
		for {
			select {
			case <-cn.ctx.Done():
				return
			case <-c.ctx.Done():
				return
			case <-t.C:
			}
			c.mu.Lock()
			keys := c.watchedKeysLocked()
			c.mu.Unlock()
			for _, k := range keys {
				if k == patternSlot {
					c.renewPatterns(cn)
					continue
				}
				if len(c.watchersOf(k)) == 0 {
					continue // stopped meanwhile
				}
				ctx, cancel := context.WithTimeout(cn.ctx, c.cfg.ResyncTimeout)
				err := c.keyNotify(ctx, k, false)
				cancel()
				if err != nil && cn.ctx.Err() == nil {
					c.log.Warn("watch not renewed", "key", k, "err", err)
				}
			}
		}
	})
}

// renewPatterns registers the patterns of the pattern watches again on
// cn, each once.
func (c *Client) renewPatterns(cn *conn) {
	done := map[string]bool{}
	for _, w := range c.watchersOf(patternSlot) {
		if done[w.pattern] {
			continue
		}
		done[w.pattern] = true
		ctx, cancel := context.WithTimeout(cn.ctx, c.cfg.ResyncTimeout)
		err := c.patternNotify(ctx, w.pattern, false)
		cancel()
		if err != nil && cn.ctx.Err() == nil {
			c.log.Warn("pattern watch not renewed", "pattern", w.pattern, "err", err)
		}
	}
}
