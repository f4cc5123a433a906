package engine

import "time"

// scheduleExpiryLocked makes sure the expiry goroutine wakes no later than
// at.
func (n *Node) scheduleExpiryLocked(at int64) {
	if n.timerAt != 0 && n.timerAt <= at {
		return
	}
	n.timerAt = at
	select {
	case n.expiryWake <- struct{}{}:
	default:
	}
}

// expiryLoop removes keys whose deadline passed, as commands with versions
// of their own, so that their watchers hear of it.
func (n *Node) expiryLoop() {
	defer n.done.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait, more := n.expireRound()
		if more {
			continue // give Submit a turn at the lock, then go on
		}
		if wait < 0 {
			wait = time.Hour
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-n.expiryWake:
			if !timer.Stop() {
				<-timer.C
			}
		case <-n.stop:
			return
		}
	}
}

// expireRound expires up to one batch of keys. It returns how long to wait
// for the next deadline (negative: none) and whether more keys are due now.
func (n *Node) expireRound() (wait time.Duration, more bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closing || n.failed != nil {
		return -1, false
	}
	now := max(n.clock.PhysicalNow(), n.lastTime)
	keys := n.m.AppendExpired(nil, now, n.cfg.ExpiryBatch)
	journaled, replicating := false, false
	for _, k := range keys {
		switch n.expireLocked([]byte(k), now) {
		case AppliedUnflushed:
			journaled = true
		case Pending:
			replicating = true
		case Refused:
			// Only the leader of a cluster expires keys; it applies
			// here too when committed. Look again later, in case this
			// node becomes the leader.
			return expiryRetry, false
		}
	}
	if len(keys) > 0 {
		if journaled {
			// The expiries must reach the journal even when nobody is
			// told of them.
			n.enqueueLocked(item{journaled: true})
		}
		n.signal()
	}
	if replicating {
		// The keys stay in the machine until the expiries are
		// committed: give the log time rather than propose them again.
		return expiryRetry, false
	}
	if len(keys) == n.cfg.ExpiryBatch {
		return 0, true
	}
	next, ok := n.m.NextDeadline()
	if !ok {
		n.timerAt = 0
		return -1, false
	}
	n.timerAt = next
	return time.Duration(next-now) * time.Millisecond, false
}

// expiryRetry is how long the expiry goroutine waits before it looks at
// keys that a replicated log is expiring, or that only a leader may expire.
const expiryRetry = 50 * time.Millisecond
