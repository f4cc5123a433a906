package broker

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/pubsub"
)

var _ mqtt.Remote = (*spanning)(nil)

// FilterChanged proposes a route of this node for filter, or its removal.
func (sp *spanning) FilterChanged(filter string, present bool) {
	sp.c.RouteChanged(filter, present)
}

var matchesPool = sync.Pool{New: func() any { return new(pubsub.Matches) }}

// Route sends pk to the other nodes that have a matching route, choosing
// one node for each shared subscription, and returns what the core's
// routing does with it here: nil when no other node takes it and no
// acknowledgement has to wait.
func (sp *spanning) Route(pk *packets.Packet) mqtt.Routed {
	topic := pk.TopicName
	if topic == "" || strings.HasPrefix(topic, "$SYS") {
		return nil
	}
	var retain *part
	if pk.FixedHeader.Retain {
		sp.mu.Lock()
		k := retainKey{pk.Origin, topic}
		if retain = sp.retainWait[k]; retain != nil {
			delete(sp.retainWait, k)
		}
		sp.mu.Unlock()
	}
	m := matchesPool.Get().(*pubsub.Matches)
	defer matchesPool.Put(m)
	sp.ps.Match(topic, m)
	var dests []cluster.Dest
	add := func(node string) *cluster.Dest {
		for i := range dests {
			if dests[i].Node == node {
				return &dests[i]
			}
		}
		dests = append(dests, cluster.Dest{Node: node})
		return &dests[len(dests)-1]
	}
	for _, n := range m.Nodes {
		if n != sp.self {
			add(n)
		}
	}
	var remote []string
	for _, g := range m.Groups {
		if n := sp.pick(g); n != sp.self {
			d := add(n)
			d.Groups = append(d.Groups, g.Key)
			remote = append(remote, g.Key)
		}
	}
	qos := pk.FixedHeader.Qos
	chained := qos > 0 && sp.chained.Load() > 0 && sp.hasChain(pk.Origin)
	if len(dests) == 0 && retain == nil && !chained {
		return nil
	}
	r := &routed{sp: sp, remote: remote}
	r.pending.Store(1)
	if len(dests) > 0 {
		msg := appendMessage(make([]byte, 0, len(pk.Payload)+len(topic)+64), pk, 0)
		r.pending.Add(1)
		if !sp.c.Send(dests, msg, qos, pk.Expires, r.partDone) {
			r.pending.Add(-1)
		}
	}
	if retain != nil {
		r.pending.Add(1)
		retain.onDone(r.partDone)
	}
	return r
}

// pick chooses the node that serves a message to shared subscription g:
// in turn among the nodes with members.
func (sp *spanning) pick(g pubsub.Group) string {
	if len(g.Nodes) == 1 {
		return g.Nodes[0]
	}
	v, ok := sp.rr.Load(g.Key)
	if !ok {
		v, _ = sp.rr.LoadOrStore(g.Key, new(atomic.Uint64))
	}
	i := v.(*atomic.Uint64).Add(1)
	return g.Nodes[i%uint64(len(g.Nodes))]
}

// routed is the routing of one message beyond this node: the shared
// subscriptions other nodes serve, and what the publisher's
// acknowledgement waits for (pending counts it, with one for Await).
type routed struct {
	sp      *spanning
	remote  []string
	pending atomic.Int32
	entry   *ackEntry
	chain   *ackChain
	client  string
}

func (r *routed) Serves(key string) bool { return !slices.Contains(r.remote, key) }

func (r *routed) partDone() {
	if r.pending.Add(-1) == 0 {
		// On the goroutine that reads a peer's acknowledgements: the
		// PUBACK is written on another, so that a publisher that does not
		// read holds up nobody else's.
		go r.ready()
	}
}

// Await queues the acknowledgement of the publish behind the ones of the
// client's earlier publishes that still wait: a client's acknowledgements
// go out in the order of its publishes [MQTT-4.6.0-2].
func (r *routed) Await(cl *mqtt.Client, done func()) bool {
	sp := r.sp
	sp.chainsMu.Lock()
	ch := sp.chains[cl.ID]
	if ch == nil && r.pending.Load() == 1 {
		sp.chainsMu.Unlock()
		return false
	}
	if ch == nil {
		ch = &ackChain{}
		sp.chains[cl.ID] = ch
		sp.chained.Add(1)
	}
	r.entry = &ackEntry{done: done}
	r.chain, r.client = ch, cl.ID
	ch.queue = append(ch.queue, r.entry)
	sp.chainsMu.Unlock()
	if r.pending.Add(-1) == 0 {
		r.ready()
	}
	return true
}

func (r *routed) ready() {
	sp := r.sp
	sp.chainsMu.Lock()
	r.entry.ready = true
	sp.chainsMu.Unlock()
	sp.flush(r.client, r.chain)
}

// ackChain is a client's acknowledgements that wait, in order.
type ackChain struct {
	queue    []*ackEntry
	flushing bool
}

type ackEntry struct {
	done  func()
	ready bool
}

func (sp *spanning) hasChain(client string) bool {
	sp.chainsMu.Lock()
	defer sp.chainsMu.Unlock()
	return sp.chains[client] != nil
}

// flush sends the acknowledgements at the head of ch that are ready, in
// order; one goroutine at a time does.
func (sp *spanning) flush(client string, ch *ackChain) {
	sp.chainsMu.Lock()
	if ch.flushing {
		sp.chainsMu.Unlock()
		return
	}
	ch.flushing = true
	for {
		var run []func()
		for len(ch.queue) > 0 && ch.queue[0].ready {
			run = append(run, ch.queue[0].done)
			ch.queue[0] = nil
			ch.queue = ch.queue[1:]
		}
		if len(run) == 0 {
			ch.flushing = false
			if len(ch.queue) == 0 && sp.chains[client] == ch {
				delete(sp.chains, client)
				sp.chained.Add(-1)
			}
			sp.chainsMu.Unlock()
			return
		}
		sp.chainsMu.Unlock()
		for _, f := range run {
			f()
		}
		sp.chainsMu.Lock()
	}
}

// HasRoutes reports whether a route of another node matches topic: the
// core leaves such a topic to its routing, which sends it there. This
// node's own routes are its local subscriptions, which the core knows:
// counted, they sent every message with a subscriber here, every state
// store response among them, through the routing for other nodes.
func (sp *spanning) HasRoutes(topic string) bool {
	m := matchesPool.Get().(*pubsub.Matches)
	defer matchesPool.Put(m)
	sp.ps.Match(topic, m)
	for _, n := range m.Nodes {
		if n != sp.self {
			return true
		}
	}
	for _, g := range m.Groups {
		for _, n := range g.Nodes {
			if n != sp.self {
				return true
			}
		}
	}
	return false
}

// RoutesVersion grows whenever a route of the cluster changes.
func (sp *spanning) RoutesVersion() uint64 { return sp.ps.RoutesVersion() }
