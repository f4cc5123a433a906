package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/dssio/dss/internal/mqtt"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/pubsub"
)

// Cluster is the node of a cluster the broker spans (*cluster.Node): the
// replicated metadata of the broker (routes, retained messages, client
// ids), the streams of messages to the other nodes, and the handover of
// sessions (docs/adr/0009-one-broker-across-the-cluster.md).
type Cluster interface {
	NodeID() string
	Epoch() uint64
	Stamp() hlc.Timestamp
	PubSub() *pubsub.State
	HasLeader() bool
	ReplicationWait() time.Duration
	SetBroker(cluster.Broker)
	RouteChanged(filter string, present bool)
	SyncRoutes(ctx context.Context) error
	Retain(topic string, stamp hlc.Timestamp, msg []byte, expires int64, done func(error))
	Claim(c pubsub.Claim, done func(error))
	SessionSubscriptions(client string, stamp hlc.Timestamp, subs []byte, done func(error))
	Release(client string, stamp hlc.Timestamp, persistent bool, expiry uint32)
	FetchSession(ctx context.Context, node, client, owner string, stamp hlc.Timestamp, clean bool) ([]byte, bool, error)
	Send(dests []cluster.Dest, msg []byte, qos byte, expires int64, done func()) bool
}

var _ Cluster = (*cluster.Node)(nil)

// spanning is the broker's part of a cluster: the broker core's Remote
// (which filters have subscribers here, where each message goes), the
// cluster's Broker (messages from the other nodes, the replicated
// metadata to mirror, sessions to hand over), and the events that claim
// client ids and keep persistent sessions' subscriptions in the
// replicated state.
type spanning struct {
	b    *Broker
	c    Cluster
	ps   *pubsub.State
	self string
	// wait bounds how long a client's request waits for the replicated
	// state (Cluster.ReplicationWait).
	wait time.Duration

	mu         sync.Mutex
	conns      map[string]*localConn    // guarded by mu; client id → the session held here and the claim of its last connection
	mirror     map[string]hlc.Timestamp // guarded by mu; retained topic → the stamp of the message the core holds
	retainWait map[retainKey]*part      // guarded by mu; retained publishes whose acknowledgement waits for the replicated state

	chainsMu sync.Mutex
	chains   map[string]*ackChain // guarded by chainsMu; by client id
	chained  atomic.Int32         // len(chains)

	rr sync.Map // shared subscription key → *atomic.Uint64, the round robin among its nodes
}

// localConn is the session of a client id held on this node, the stamp
// of the claim of its last connection, and who authenticated it.
type localConn struct {
	cl    *mqtt.Client
	stamp hlc.Timestamp
	owner string
}

// ownerOf names who authenticated cl, "" without authentication.
func ownerOf(cl *mqtt.Client) string {
	if a := accessOf(cl); a != nil {
		return a.identity
	}
	return ""
}

type retainKey struct{ client, topic string }

// newSpanning returns the broker's part of the cluster of c; its broker
// is set once made.
func newSpanning(c Cluster) *spanning {
	return &spanning{
		c:          c,
		ps:         c.PubSub(),
		self:       c.NodeID(),
		wait:       c.ReplicationWait(),
		conns:      map[string]*localConn{},
		mirror:     map[string]hlc.Timestamp{},
		retainWait: map[retainKey]*part{},
		chains:     map[string]*ackChain{},
	}
}

// part is one thing the acknowledgement of a publish waits for.
type part struct {
	mu   sync.Mutex
	done bool   // guarded by mu
	then func() // guarded by mu; run once done
}

func (p *part) complete() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	f := p.then
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

// onDone runs f once p is complete: now, if it is.
func (p *part) onDone(f func()) {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		f()
		return
	}
	p.then = f
	p.mu.Unlock()
}
