package cluster

import (
	"cmp"
	"time"
)

// gatherMax bounds how long a batch of writes waits for more before it
// goes to Raft.
const gatherMax = time.Millisecond

// gathering is what the proposer knows of its last entry, for the next:
// how many writes of this node's clients it should hold, and how long an
// entry takes from its proposal to its application.
//
// Clients that send one write at a time and wait for each answer split
// into two halves that take turns: while an entry is committed, the
// clients its predecessor answered send their next writes, which make
// the next entry, and those the entry answers come back just after that
// next entry left. With 16 such clients every entry held 8 writes and
// each write waited for two entries, and each entry costs every node a
// log sync and a message per follower whatever it holds. So once an
// entry has been applied, the next one waits for the clients it answered
// to come back (as many writes as it held of this node's clients,
// beside those that waited already) for at most a quarter of the time
// an entry takes, and at most gatherMax: then one entry holds all 16,
// and each write waits for one entry. A client alone, or writes that
// were not part of such a round, find the count reached and go at once.
//
// Writes forwarded by another node are not waited for: their clients
// are answered once that node has applied the entry, which it learns
// from the leader's next message, so waiting for them would only delay
// that message.
type gathering struct {
	target int           // writes of this node's clients for the next entry
	took   time.Duration // the last entry, from its proposal to its application
	max    time.Duration // the bound of a wait; gatherMax when 0
	timer  *time.Timer
}

// done records an entry holding count writes of this node's clients,
// applied after took, while waiting such writes waited for the next.
func (g *gathering) done(count, waiting int, took time.Duration) {
	g.target, g.took = count+waiting, took
}

// gather waits, after an entry was applied, for the writes of the
// clients it answered to join those waiting, within g's bound.
func (n *Node) gather(g *gathering) {
	target := g.target
	g.target = 0 // once per entry
	limit := min(g.took/4, cmp.Or(g.max, gatherMax))
	if target <= 1 || limit <= 0 {
		return
	}
	if g.timer == nil {
		g.timer = time.NewTimer(limit)
	} else {
		g.timer.Reset(limit)
	}
	defer g.timer.Stop()
	for n.own.Load() < int64(target) {
		select {
		case <-n.wake:
		case <-g.timer.C:
			return
		case <-n.stop:
			return
		}
	}
}
