package cluster

import "github.com/hashicorp/raft"

// await returns f's error, or errClosed once the node is closing.
// hashicorp/raft can leave the future of an entry unanswered for good:
// an entry committed just before Raft shuts down waits in the queue of
// its state machine, which nobody reads after the shutdown. A goroutine
// of the node that waited for such a future directly would keep Close
// waiting for ever; this one leaves the wait to a goroutine of its own.
func (n *Node) await(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
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
