package cluster

import (
	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/pubsub"
)

// Broker is what a node asks of the MQTT broker bound to it
// (docs/adr/0009-one-broker-across-the-cluster.md): to mirror the
// replicated metadata, to deliver the messages other nodes send, and to
// hand over a session another node takes. Set it with SetBroker before
// Start.
type Broker interface {
	// The observer's calls come from the FSM goroutine, in log order,
	// and must not block.
	pubsub.Observer
	// Deliver hands a message that came from another node to this node's
	// subscribers: msg as the sender passed it to Send, groups the shared
	// subscriptions this node serves it to, expires when it expires
	// (Unix nanoseconds by this node's clock; 0 for never). It is called
	// on the goroutine that reads the sender's stream, one message after
	// the other in the sender's order, and returns once the message is in
	// the subscribers' sessions.
	Deliver(from string, msg []byte, groups []string, expires int64)
	// TakeSession ends this node's connection of client, if it took the
	// id before stamp and was authenticated as owner, with DISCONNECT
	// 0x8E, removes the session, and returns it encoded for the node that
	// takes it (nothing when clean is set: the new connection starts
	// afresh). ok is false when this node holds no such session. It runs
	// on an RPC goroutine.
	TakeSession(client, owner string, stamp hlc.Timestamp, clean bool) (session []byte, ok bool)
}

// SetBroker binds b to the node. It must be called before Start.
func (n *Node) SetBroker(b Broker) { n.broker = b }

// PubSub returns the broker's replicated metadata, for lookups.
func (n *Node) PubSub() *pubsub.State { return n.ps }

// NodeID returns this node's id.
func (n *Node) NodeID() string { return n.cfg.NodeID }

// Epoch returns this process's epoch, drawn at random when it started:
// the connections a node holds are those of its current epoch.
func (n *Node) Epoch() uint64 { return n.epoch }

// Stamp returns a new stamp of this node's clock for a change of the
// replicated metadata: after every stamp the node has applied, so that a
// change made here after one seen here orders after it.
func (n *Node) Stamp() hlc.Timestamp { return n.clock.Now() }

// The node observes the replicated state for its broker, raising its
// clock past every stamp applied.

func (n *Node) RetainedChanged(topic string, r pubsub.Retained) {
	n.clock.Observe(r.Stamp)
	if n.broker != nil {
		n.broker.RetainedChanged(topic, r)
	}
}

func (n *Node) Claimed(client string, s pubsub.Session) {
	n.clock.Observe(s.Stamp)
	if n.broker != nil {
		n.broker.Claimed(client, s)
	}
}

func (n *Node) Restored() {
	if n.broker != nil {
		n.broker.Restored()
	}
}

var _ pubsub.Observer = (*Node)(nil)
