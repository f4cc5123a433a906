package cluster

import (
	"testing"
	"time"
)

// gatherNode is a node with what gather looks at: the count of its
// writes waiting that answer a request, its wake-up and its stop.
func gatherNode() *Node {
	return &Node{wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// arrive adds a write that answers a request, as Propose does.
func arrive(n *Node) {
	n.asked.Add(1)
	select {
	case n.wake <- struct{}{}:
	default:
	}
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

// After an entry of 8 writes was applied while 8 more waited, the next
// entry waits for the 8 answered to come back, and no longer.
func TestTheNextEntryWaitsForTheWritesTheLastOneAnswered(t *testing.T) {
	n := gatherNode()
	for range 8 {
		arrive(n) // waited while the entry was committed
	}
	var g gathering
	g.done(8, 8, time.Hour)
	g.max = time.Hour // only the writes end this wait
	done := gatherDone(n, &g)
	for i := range 7 {
		arrive(n)
		select {
		case <-done:
			t.Fatalf("gather ended with %d of the 8 answered writes back", i+1)
		case <-time.After(5 * time.Millisecond):
		}
	}
	arrive(n)
	ended(t, done, "all 16 writes came")
	if got := n.asked.Load(); got != 16 {
		t.Fatalf("%d writes, want 16", got)
	}
}

// The clients an entry answered may not write again: the wait ends at
// its bound, a quarter of the time the entry took (and at most
// gatherMax, which the test lifts).
func TestGatherEndsAtItsBound(t *testing.T) {
	n := gatherNode()
	arrive(n)
	g := gathering{max: time.Hour}
	g.done(4, 1, 40*time.Millisecond)
	start := time.Now()
	ended(t, gatherDone(n, &g), "no write came back")
	if waited := time.Since(start); waited < 10*time.Millisecond {
		t.Fatalf("waited %v, want the bound of 10ms", waited)
	}
	if g.target != 0 {
		t.Fatal("the target outlived its entry")
	}
	// Once per entry: the next call, with no entry applied since, goes
	// at once.
	ended(t, gatherDone(n, &g), "no entry applied since")
}

// A client alone, or a first entry, never waits; nor does a node that
// stops.
func TestGatherWaitsForNothingElse(t *testing.T) {
	n := gatherNode()
	var g gathering
	g.max = time.Hour
	ended(t, gatherDone(n, &g), "no entry applied yet")

	g.done(1, 0, time.Hour) // one client, one write
	ended(t, gatherDone(n, &g), "a client alone")

	g.done(8, 8, time.Hour)
	done := gatherDone(n, &g)
	close(n.stop)
	ended(t, done, "the node stopped")
}
