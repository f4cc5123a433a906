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

// applied hands the batch to Raft, as the proposer does, and records it as
// applied after took.
func applied(n *Node, g *gathering, took time.Duration) {
	n.mu.Lock()
	returning := n.returns.propose()
	n.mu.Unlock()
	g.done(returning, took)
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

// Eight clients that write one at a time take turns in two groups of
// four; once the entry of one group has been applied, the next waits for
// that group to come back, and no longer: then one entry holds all
// eight.
func TestTheNextEntryWaitsForTheClientsTheLastOneAnswered(t *testing.T) {
	n := gatherNode()
	g := gathering{max: time.Hour} // only the writes end these waits
	a, b := clients("a", 4), clients("b", 4)
	for _, c := range a {
		arrive(n, c)
	}
	applied(n, &g, time.Hour) // the first entry: nobody returns yet
	ended(t, gatherDone(n, &g), "nobody to wait for")
	for _, c := range b {
		arrive(n, c)
	}
	applied(n, &g, time.Hour)
	ended(t, gatherDone(n, &g), "the second group has not written before")
	for _, c := range a {
		arrive(n, c) // answered by the first entry while the second was committed
	}
	applied(n, &g, time.Hour)
	if g.target != 4 {
		t.Fatalf("the third entry answered %d returning writes, want 4", g.target)
	}
	// The clients of the second entry come back (they wrote in the
	// first entry's turn too), and those of the third wait for them.
	for _, c := range b {
		arrive(n, c)
	}
	done := gatherDone(n, &g)
	for i, c := range a[:3] {
		arrive(n, c)
		notEnded(t, done, fmt.Sprintf("%d of the 4 answered clients back", i+1))
	}
	arrive(n, a[3])
	ended(t, done, "all 4 came back")
	applied(n, &g, time.Hour)
	if g.target != 8 {
		t.Fatalf("the entry of both groups answered %d returning writes, want 8", g.target)
	}
	done = gatherDone(n, &g)
	for _, c := range append(a, b...)[:7] {
		arrive(n, c)
	}
	notEnded(t, done, "7 of the 8 back")
	arrive(n, b[3])
	ended(t, done, "all 8 came back")
}

// Clients that each write once (devices reporting now and then) are not
// waited for, however many of them an entry held: each would end a wait
// only by chance.
func TestGatherDoesNotWaitForClientsThatWroteOnce(t *testing.T) {
	n := gatherNode()
	g := gathering{max: time.Hour}
	for round := range 5 {
		for _, c := range clients(fmt.Sprintf("r%d-", round), 50) {
			arrive(n, c)
		}
		applied(n, &g, time.Hour)
		if g.target != 0 {
			t.Fatalf("round %d: %d returning writes, want 0", round, g.target)
		}
		ended(t, gatherDone(n, &g), "no client of the entry wrote before")
	}
}

// Returning clients that stop writing end the wait at its bound, the
// time the entry took (at most gatherMax, which the test lifts), once.
func TestGatherEndsAtItsBound(t *testing.T) {
	n := gatherNode()
	g := gathering{max: time.Hour}
	for range 2 {
		for _, c := range clients("c", 4) {
			arrive(n, c)
		}
		applied(n, &g, 40*time.Millisecond)
	}
	if g.target != 4 {
		t.Fatalf("%d returning writes, want 4", g.target)
	}
	start := time.Now()
	ended(t, gatherDone(n, &g), "no client came back")
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Fatalf("waited %v, want the bound of 40ms", waited)
	}
	if g.target != 0 {
		t.Fatal("the target outlived its entry")
	}
	// Once per entry: the next call, with no entry applied since, goes
	// at once.
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

	g.done(8, time.Hour)
	done := gatherDone(n, &g)
	close(n.stop)
	ended(t, done, "the node stopped")
}
