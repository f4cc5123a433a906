package cluster

import (
	"fmt"
	"testing"
	"time"
)

// gatherNode is a node with what gather looks at: the writes of its
// batch by client, its wake-up and its stop.
func gatherNode() *Node {
	return &Node{wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// arrive adds a write of client that answers a request, as Propose does.
func arrive(n *Node, client string) {
	n.mu.Lock()
	n.returns.add(client)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// arriveAll adds a write of each of clients.
func arriveAll(n *Node, clients []string) {
	for _, c := range clients {
		arrive(n, c)
	}
}

// applied hands the batch to Raft, as the proposer does, and records it as
// applied after took.
func applied(n *Node, g *gathering, took time.Duration) {
	n.mu.Lock()
	asked, returning := n.returns.propose()
	n.mu.Unlock()
	g.done(asked, returning, n.returns.asked.Load(), took)
}

func clients(prefix string, count int) []string {
	c := make([]string, count)
	for i := range c {
		c[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return c
}

// gatherDone runs gather on its own goroutine and reports its end.
func gatherDone(n *Node, g *gathering) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.gather(g)
	}()
	return done
}

func ended(t *testing.T, done chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("gather did not end: %s", what)
	}
}

func notEnded(t *testing.T, done chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
		t.Fatalf("gather ended: %s", what)
	case <-time.After(5 * time.Millisecond):
	}
}

// Clients that write one at a time and wrote in the entry before are
// waited for until all of them are back, however many writes of other
// clients came meanwhile.
func TestTheNextEntryWaitsForTheReturningClients(t *testing.T) {
	n := gatherNode()
	g := gathering{max: time.Hour} // only the writes end these waits
	a := clients("a", 4)
	arriveAll(n, a)
	applied(n, &g, 0) // the first entry: nobody returns yet, no wait
	ended(t, gatherDone(n, &g), "an entry that took no time")
	arriveAll(n, a)
	applied(n, &g, time.Hour)
	if g.answered != 4 || g.returning != 4 {
		t.Fatalf("the second entry answered %d writes, %d of returning clients; want 4 and 4", g.answered, g.returning)
	}
	done := gatherDone(n, &g)
	arriveAll(n, clients("x", 8)) // enough writes, but of clients that did not write before
	for i, c := range a[:3] {
		notEnded(t, done, fmt.Sprintf("%d of the 4 returning clients back", i))
		arrive(n, c)
	}
	notEnded(t, done, "3 of the 4 returning clients back")
	arrive(n, a[3])
	ended(t, done, "all 4 came back")
}

// Two groups of clients that take turns end up in one entry: the writes
// of the group that waited during the commit count as returning too.
func TestGroupsThatTakeTurnsShareAnEntry(t *testing.T) {
	n := gatherNode()
	g := gathering{max: time.Hour}
	a, b := clients("a", 4), clients("b", 4)
	arriveAll(n, a)
	applied(n, &g, time.Hour) // a
	arriveAll(n, b)           // b came while a's entry was committed
	done := gatherDone(n, &g)
	arriveAll(n, a)
	ended(t, done, "as many writes as the entry answered came")
	applied(n, &g, time.Hour) // b and a
	if g.answered != 8 || g.returning != 4 {
		t.Fatalf("the entry answered %d writes, %d of returning clients; want 8 and 4", g.answered, g.returning)
	}
	done = gatherDone(n, &g)
	arriveAll(n, append(b, a...)[:7])
	notEnded(t, done, "7 of the 8 back")
	arrive(n, a[3])
	ended(t, done, "all 8 came back")
	applied(n, &g, time.Hour)
	if g.answered != 8 || g.returning != 8 {
		t.Fatalf("the entry answered %d writes, %d of returning clients; want 8 and 8", g.answered, g.returning)
	}
}

// Clients that each write once (devices reporting now and then) are
// waited for only as writes of any client: as many as the entry
// answered end the wait.
func TestGatherWaitsForWritesOfAnyClient(t *testing.T) {
	n := gatherNode()
	g := gathering{max: time.Hour}
	arriveAll(n, clients("r0-", 50))
	for round := range 4 {
		applied(n, &g, time.Hour)
		if g.answered != 50 || g.returning != 0 {
			t.Fatalf("round %d: %d writes, %d of returning clients; want 50 and 0", round, g.answered, g.returning)
		}
		done := gatherDone(n, &g)
		next := clients(fmt.Sprintf("r%d-", round+1), 50)
		arriveAll(n, next[:49])
		notEnded(t, done, "49 of 50 writes")
		arrive(n, next[49])
		ended(t, done, "50 writes came")
	}
}

// The writes owed end the wait at its bounds: those of any client after
// a quarter of the time the entry took, those of returning clients after
// all of it (at most gatherMax, which the test lifts); once per entry.
func TestGatherEndsAtItsBounds(t *testing.T) {
	n := gatherNode()
	g := gathering{max: time.Hour}
	arriveAll(n, clients("once", 4))
	applied(n, &g, 80*time.Millisecond)
	start := time.Now()
	ended(t, gatherDone(n, &g), "no write came")
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("waited %v for writes of any client, want the bound of 20ms", waited)
	}
	ended(t, gatherDone(n, &g), "no entry applied since") // once per entry

	for range 2 {
		arriveAll(n, clients("again", 4))
		applied(n, &g, 80*time.Millisecond)
	}
	start = time.Now()
	ended(t, gatherDone(n, &g), "no returning client came back")
	if waited := time.Since(start); waited < 80*time.Millisecond {
		t.Fatalf("waited %v for returning clients, want the bound of 80ms", waited)
	}
	ended(t, gatherDone(n, &g), "no entry applied since")
}

// A client alone never waits; nor does a node that stops.
func TestGatherWaitsForNothingElse(t *testing.T) {
	n := gatherNode()
	g := gathering{max: time.Hour}
	for range 3 {
		arrive(n, "alone")
		applied(n, &g, time.Hour)
		ended(t, gatherDone(n, &g), "a client alone")
	}

	g.done(8, 8, 0, time.Hour)
	done := gatherDone(n, &g)
	close(n.stop)
	ended(t, done, "the node stopped")
}
