package hlc

import (
	"sync"
	"time"
)

// MaxCounter is the largest counter a Clock issues: the text form pads
// the counter to five digits, and the vendor's clients read it as such.
const MaxCounter = 99999

// Clock issues timestamps for one node following the hybrid logical clock
// rules: every timestamp it returns is greater than every timestamp it
// returned or observed before, and stays close to the physical clock.
// A Clock is safe for concurrent use.
type Clock struct {
	node string
	now  func() time.Time

	mu      sync.Mutex
	wall    int64  // guarded by mu; wall part of the highest reading so far
	counter uint32 // guarded by mu
}

// NewClock returns a clock for the node id node. now supplies physical time;
// nil means time.Now.
func NewClock(node string, now func() time.Time) *Clock {
	if now == nil {
		now = time.Now
	}
	return &Clock{node: node, now: now}
}

// Node returns the node id that the clock stamps on its timestamps.
func (c *Clock) Node() string { return c.node }

// PhysicalNow returns the physical clock reading in milliseconds.
func (c *Clock) PhysicalNow() int64 { return c.now().UnixMilli() }

// Now returns a new timestamp for a local event.
func (c *Clock) Now() Timestamp { return c.Update(Timestamp{}) }

// Update returns a new timestamp for an event caused by a message stamped
// remote: it is greater than remote and than everything the clock issued or
// observed before.
func (c *Clock) Update(remote Timestamp) Timestamp {
	return c.UpdateAt(remote, c.PhysicalNow())
}

// UpdateAt is Update with the physical clock read as pt milliseconds, for
// a caller that has just read it (a reading costs as much as the update).
func (c *Clock) UpdateAt(remote Timestamp, pt int64) Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := max(c.wall, remote.Wall, pt)
	var n uint64
	switch {
	case l == c.wall && l == remote.Wall:
		n = uint64(max(c.counter, remote.Counter)) + 1
	case l == c.wall:
		n = uint64(c.counter) + 1
	case l == remote.Wall:
		n = uint64(remote.Counter) + 1
	}
	if n > MaxCounter {
		// The counter would not fit the five digits of the text form
		// (a remote __ts counter of 99999, or of more digits): the
		// version moves to the next millisecond instead, which is still
		// greater than everything before it.
		l, n = l+1, 0
	}
	c.wall, c.counter = l, uint32(n)
	return Timestamp{Wall: l, Counter: uint32(n), Node: c.node}
}

// Observe raises the clock so that every later timestamp is greater than ts,
// without issuing one. Recovery uses it to carry the clock over a restart,
// even when the physical clock went backwards meanwhile.
func (c *Clock) Observe(ts Timestamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ts.Wall > c.wall || (ts.Wall == c.wall && ts.Counter > c.counter) {
		c.wall, c.counter = ts.Wall, ts.Counter
	}
}

// Last returns the highest timestamp issued or observed so far, stamped with
// this clock's node id.
func (c *Clock) Last() Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Timestamp{Wall: c.wall, Counter: c.counter, Node: c.node}
}

// AheadBy reports whether ts is more than skew ahead of the physical clock.
func (c *Clock) AheadBy(ts Timestamp, skew time.Duration) bool {
	return ts.Wall > c.now().UnixMilli()+skew.Milliseconds()
}
