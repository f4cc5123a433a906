package client

import (
	"context"
	"time"
)

// startRenewal registers the watched keys again every WatchRenewal while
// cn lasts: a server attached to another broker (dss attach) cannot see
// the client's connection, and ends a registration that is not renewed
// within its lease.
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
