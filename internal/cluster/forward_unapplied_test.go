package cluster

import (
	"testing"
	"time"
)

// unappliedNode is a node with what untilApplied looks at: its machine's
// applied index and waiters, the writes under way per client, and a
// forwarder.
func unappliedNode() *Node {
	n := &Node{order: newWriteOrder()}
	n.fsm = &fsm{n: n}
	n.fwd = newForwarder(n)
	return n
}

// A client's write through a follower is answered once the leader has
// applied it; the client's reads on the follower wait until the
// follower's machine has applied it too, exactly once whichever ends the
// wait first, and no longer than leaderWait: a follower cut off from the
// majority just after the answer may never learn that the entry was
// committed.
func TestReadsWaitForTheFollowersCopyWithinABound(t *testing.T) {
	n := unappliedNode()
	f := n.fwd

	// Applied already: nothing to wait for.
	n.fsm.setApplied(3)
	n.order.begin("c1")
	f.untilApplied("c1", 3)
	if n.order.pending("c1") {
		t.Fatal("a write this node applied already holds the client's reads")
	}

	// Two writes of c1 answered before this node applied them; the first
	// entry is applied, then the bound passes for the second.
	n.order.begin("c1")
	n.order.begin("c1")
	f.untilApplied("c1", 5)
	start := time.Now()
	f.untilApplied("c1", 9)
	end := time.Now()
	n.fsm.setApplied(5)
	if !n.order.pending("c1") {
		t.Fatal("the reads went on with entry 9 not applied")
	}
	if next := f.expireUnapplied(start); next.Before(start.Add(leaderWait)) || next.After(end.Add(leaderWait)) {
		t.Fatalf("next deadline %v after the answer, want %v", next.Sub(start), leaderWait)
	}
	if f.expireUnapplied(start.Add(leaderWait / 2)); !n.order.pending("c1") {
		t.Fatal("the reads went on before the bound")
	}
	if next := f.expireUnapplied(end.Add(leaderWait)); !next.IsZero() {
		t.Fatalf("a wait is left after the bound, due %v", next)
	}
	if n.order.pending("c1") {
		t.Fatal("the reads still wait past the bound")
	}

	// Entry 9 applied after the bound: the wait ended already, and the
	// count of another write of c1 under way is left alone.
	n.order.begin("c1")
	n.fsm.setApplied(9)
	if !n.order.pending("c1") {
		t.Fatal("a wait ended twice: it ended another write's")
	}
}
