package cluster

import (
	"cmp"
	"time"
)

// gatherMax bounds how long a batch of writes waits for more before it
// goes to Raft.
const gatherMax = time.Millisecond

// gathering is what the proposer knows of its last entry, for the next:
// how many writes that answer a request it should hold, and how long an
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
// to come back (as many writes as it answered, beside those that waited
// already) for at most a quarter of the time an entry takes, and at most
// gatherMax: then one entry holds all 16, and each write waits for one
// entry. A client alone, or writes that were not part of such a round,
// find the count reached and go at once.
//
// Writes a follower forwarded count as well: the follower answers its
// clients as soon as the leader's answer arrives, so they come back
// after one more hop each way.
type gathering struct {
	target int           // writes that answer a request, for the next entry
	took   time.Duration // the last entry, from its proposal to its application
	max    time.Duration // the bound of a wait; gatherMax when 0
	timer  *time.Timer
}

// done records an entry holding count writes that answer a request,
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
	for n.asked.Load() < int64(target) {
		select {
		case <-n.wake:
		case <-g.timer.C:
			return
		case <-n.stop:
			return
		}
	}
}
