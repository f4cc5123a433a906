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
// how many writes that answer a request it held, how many of them were
// of returning clients, and how long it took from its proposal to its
// application.
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
// The wait has two parts, and ends when both have:
//   - as many writes of any clients as the entry answered, beside those
//     that waited already, for at most a quarter of the time the entry
//     took and of gatherMax: writes that come at random moments, each of
//     another client, fill an entry about as fast as it is committed;
//   - as many writes of returning clients (those with a write in one of
//     the two entries before the one applied, counted by returns) as the
//     entry answered, for at most the time the entry took and gatherMax.
//     On a machine whose processors are busy the answered clients take
//     about as long to come back as an entry takes (2 ms of 2.1 with 64
//     clients on two cores), so a quarter of it ends most of these waits
//     early. Only returning clients are waited for this long: a wait as
//     long for clients that write now and then would only delay the
//     writes that came.
//
// A client that stops writing costs one wait, after which it no longer
// counts as returning. Writes a follower forwarded count as well: the
// follower answers its clients as soon as the leader's answer arrives,
// so they come back after one more hop each way.
type gathering struct {
	answered  int           // writes that answer a request in the last entry
	returning int           // those of them of returning clients
	waiting   int64         // writes in the batch once the entry was applied
	took      time.Duration // the last entry, from its proposal to its application
	max       time.Duration // the bound of a wait; gatherMax when 0
	timer     *time.Timer
}

// done records an entry that answered answered writes, returning of
// them of returning clients, and was applied after took while waiting
// writes waited for the next.
func (g *gathering) done(answered, returning int, waiting int64, took time.Duration) {
	g.answered, g.returning, g.waiting, g.took = answered, returning, waiting, took
}

// gather waits, after an entry was applied, for the clients it answered
// to write again, within g's bounds.
func (n *Node) gather(g *gathering) {
	answered, returning := int64(g.answered), int64(g.returning)
	g.answered, g.returning = 0, 0 // once per entry
	long := min(g.took, cmp.Or(g.max, gatherMax))
	short := long / 4
	start, before := time.Now(), g.waiting
	for {
		waited := time.Since(start)
		came := answered <= 1 || n.returns.asked.Load()-before >= answered || waited >= short
		back := returning <= 1 || n.returns.back.Load() >= returning || waited >= long
		if came && back {
			if g.timer != nil {
				g.timer.Stop()
			}
			return
		}
		until := long
		if !came {
			until = short
		}
		if g.timer == nil {
			g.timer = time.NewTimer(until - waited)
		} else {
			g.timer.Reset(until - waited)
		}
		select {
		case <-n.wake:
		case <-g.timer.C:
		case <-n.stop:
			g.timer.Stop()
			return
		}
	}
}

// returns counts the writes in the batch that answer a request, and
// tells those of clients that write again and again from the others, by
// the clients of the batch and of the last two entries proposed. It is
// guarded by the node's mu but for asked and back, which gather reads.
type returns struct {
	batch, last, before map[string]struct{} // the clients of each
	// asked counts the writes in the batch.
	asked atomic.Int64
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
	r.asked.Add(1)
	if _, ok := r.last[client]; ok {
		r.back.Add(1)
		r.returning++
	} else if _, ok := r.before[client]; ok {
		r.returning++
	}
	r.batch[client] = struct{}{}
}

// propose starts a new batch once the last was handed to Raft, and
// returns the writes that batch held, and those of returning clients.
func (r *returns) propose() (asked, returning int) {
	asked, returning = int(r.asked.Swap(0)), r.returning
	r.returning = 0
	r.back.Store(0)
	if r.batch == nil {
		return asked, returning
	}
	old := r.before
	if len(old) > manyClients {
		old = make(map[string]struct{})
	} else {
		clear(old)
	}
	r.before, r.last, r.batch = r.last, r.batch, old
	return asked, returning
}
