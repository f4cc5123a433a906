package engine

import (
	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/wire"
)

// ApplyCommitted applies writes that a replicated log committed, in log
// order, and queues their results and changes for delivery. Every node of
// a cluster calls it for every committed write; on the node that proposed
// a write, w.Op is the request it answers (the log found it again), on the
// others nil. The clock is raised above every version applied, and the
// time of later decisions never goes below the commands' time, so a node
// that becomes the leader decides after everything in its log.
//
// ApplyCommitted does not block on I/O: a replicated log made the writes
// durable before it committed them.
func (n *Node) ApplyCommitted(writes []Write) {
	n.mu.Lock()
	for i := range writes {
		w := &writes[i]
		n.clock.Observe(maxVersion(w.Command.Version, w.ExpireVersion))
		if w.Duplicate {
			if w.Op != nil {
				w.Op.Result = w.Result
			}
		} else {
			n.applyWriteLocked(w)
		}
		if w.Op != nil {
			// Counted as undelivered since Submit proposed it.
			n.queue = append(n.queue, item{op: w.Op})
		}
	}
	n.mu.Unlock()
	n.signal()
}

// Abandon answers "the state store is unavailable" to requests that a
// replicated log took (Propose returned Pending) and will not apply: it
// lost its leadership or is closing before they were committed. A write
// abandoned so may still be committed by a later leader; clients resend
// such requests, and the replicated state recognises a request it has
// already applied.
func (n *Node) Abandon(ops []*Op) {
	n.mu.Lock()
	for _, op := range ops {
		op.Result = Result{Err: errUnavailable}
		n.queue = append(n.queue, item{op: op})
	}
	n.mu.Unlock()
	n.signal()
}

// Deliver queues op, whose Result is filled in, for delivery after
// everything applied so far: a replicated log answers a request this way
// once the write it forwarded to another node is applied here too.
func (n *Node) Deliver(op *Op) {
	n.mu.Lock()
	n.enqueueLocked(item{op: op})
	n.mu.Unlock()
	n.signal()
}

// Read carries out a GET, KEYINFO or SCAN on this node's machine now and
// delivers its result on the delivery goroutine, after everything applied
// so far: a replicated log reads this way once the machine is known to be
// current.
func (n *Node) Read(op *Op) {
	op.Result = Result{}
	op.Inline = false
	n.mu.Lock()
	switch now := max(n.clock.PhysicalNow(), n.lastTime); {
	case n.closing || n.failed != nil:
		op.Result.Err = errUnavailable
	case op.Request.Verb == wire.VerbScan:
		n.scanLocked(op, now)
	default:
		n.readLocked(op, now)
	}
	n.enqueueLocked(item{op: op})
	n.mu.Unlock()
	n.signal()
}

func maxVersion(a, b hlc.Timestamp) hlc.Timestamp {
	if a.Before(b) {
		return b
	}
	return a
}
