package cluster

import (
	"cmp"
	"sync/atomic"
	"time"
)

// gatherMax bounds how long a batch of writes waits for more before it
// goes to Raft.
const gatherMax = 4 * time.Millisecond

// gathering is what the proposer knows of its last entry, for the next:
// how many writes of returning clients it answered, and how long it
// took from its proposal to its application.
//
// Clients that send one write at a time and wait for each answer split
// into groups that take turns: while an entry is committed, the clients
// its predecessor answered send their next writes, which make the next
// entry, and those the entry answers come back just after that next
// entry left. Each entry costs every node a log sync and a message per
// follower whatever it holds, so the smaller entries cost more per
// write, and each write waits for two entries instead of one. So once
// an entry has been applied, the next one waits for the clients it
// answered to come back: then one entry holds them all.
//
// Only clients that keep coming back are waited for: those with a
// write in one of the two entries before the one applied (returning
// writes, counted by returns). Clients that write now and then, each
// once, would never end such a wait; a wait for them would only delay
// the writes that came. A wait ends when as many returning writes came
// back as the entry answered, after the time the entry took, at most
// gatherMax, or when the node stops: a client that stops writing costs
// one wait, after which it no longer counts as returning. On a machine
// whose processors are busy the answered clients take about as long to
// come back as an entry takes (2 ms of 2.1 with 64 clients on two
// cores), so a shorter bound ends most waits early.
//
// Writes a follower forwarded count as well: the follower answers its
// clients as soon as the leader's answer arrives, so they come back
// after one more hop each way.
type gathering struct {
	target int           // returning writes the last entry answered
	took   time.Duration // the last entry, from its proposal to its application
	max    time.Duration // the bound of a wait; gatherMax when 0
	timer  *time.Timer
}

// done records an entry that answered target returning writes and was
// applied after took.
func (g *gathering) done(target int, took time.Duration) {
	g.target, g.took = target, took
}

// gather waits, after an entry was applied, for the returning clients
// it answered to write again, within g's bound.
func (n *Node) gather(g *gathering) {
	target := g.target
	g.target = 0 // once per entry
	limit := min(g.took, cmp.Or(g.max, gatherMax))
	if target <= 1 || limit <= 0 {
		return
	}
	if g.timer == nil {
		g.timer = time.NewTimer(limit)
	} else {
		g.timer.Reset(limit)
	}
	defer g.timer.Stop()
	for n.returns.back.Load() < int64(target) {
		select {
		case <-n.wake:
		case <-g.timer.C:
			return
		case <-n.stop:
			return
		}
	}
}

// returns tells, of the writes that answer a request, those of clients
// that write again and again from the others, by the clients of the
// batch and of the last two entries proposed. It is guarded by the
// node's mu but for back, which gather reads.
type returns struct {
	batch, last, before map[string]struct{} // the clients of each
	// returning counts the writes in the batch of clients with a write
	// in last or before.
	returning int
	// back counts the writes in the batch of clients with a write in
	// last: the entry that gather waits after.
	back atomic.Int64
}

// manyClients is the size above which a set of clients is dropped
// rather than cleared, so that a burst of clients does not keep its
// memory.
const manyClients = 4096

// add counts a write of client in the batch.
func (r *returns) add(client string) {
	if r.batch == nil {
		r.batch, r.last, r.before = make(map[string]struct{}), make(map[string]struct{}), make(map[string]struct{})
	}
	if _, ok := r.last[client]; ok {
		r.back.Add(1)
		r.returning++
	} else if _, ok := r.before[client]; ok {
		r.returning++
	}
	r.batch[client] = struct{}{}
}

// propose starts a new batch once the last was handed to Raft, and
// returns the returning writes that batch held.
func (r *returns) propose() int {
	returning := r.returning
	r.returning = 0
	r.back.Store(0)
	if r.batch == nil {
		return returning
	}
	old := r.before
	if len(old) > manyClients {
		old = make(map[string]struct{})
	} else {
		clear(old)
	}
	r.before, r.last, r.batch = r.last, r.batch, old
	return returning
}
