package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// await returns f's error, or errClosed once the node is closing.
// hashicorp/raft can leave the future of an entry unanswered for good:
// an entry committed just before Raft shuts down waits in the queue of
// its state machine, which nobody reads after the shutdown. A goroutine
// of the node that waited for such a future directly would keep Close
// waiting for ever; this one leaves the wait to a goroutine of its own,
// which Close lets end before it shuts Raft down (settleAwaits).
func (n *Node) await(f raft.Future) error {
	// Counted before closing is read: Close, which closes it before it
	// reads the count, either waits for this one or is seen here.
	n.awaiting.Add(1)
	select {
	case <-n.closing:
		n.awaiting.Add(-1)
		return errClosed
	default:
	}
	done := make(chan error, 1)
	go func() {
		defer n.awaiting.Add(-1)
		done <- f.Error()
	}()
	select {
	case err := <-done:
		return err
	case <-n.closing:
		select {
		case err := <-done:
			return err
		default:
			return errClosed
		}
	}
}

// settleAwaits waits, for at most limit, until every future await left
// to a goroutine is answered. While Raft runs, each one is: an entry in
// flight is applied, or fails when the node loses its leadership (a
// leader that stops hands it over first); after the shutdown, the
// entries committed and not applied would never be, and their goroutines
// would outlive the node.
func (n *Node) settleAwaits(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for n.awaiting.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}
