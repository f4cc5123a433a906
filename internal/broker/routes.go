package broker

import (
	"strings"
	"sync"
	"sync/atomic"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/pubsub"
)

// routes caches, by topic, who subscribed to it, so that the broker's
// topic trie is not walked (and its result maps not allocated) for every
// response. Any subscription change anywhere invalidates every entry: they
// are rare next to requests.
type routes struct {
	srv *mqtt.Server
	gen atomic.Uint64 // bumped on every subscription change
	// cluster, when the broker spans a cluster, holds the other nodes'
	// routes: a topic one of them has is routed by the core (which sends
	// it there), and a change of them invalidates every entry too.
	cluster *pubsub.State

	mu     sync.RWMutex
	byName map[string]route // guarded by mu
}

// route is who receives a message on one topic.
type route struct {
	gen uint64
	// general marks topics with shared or inline subscriptions: those go
	// through the broker's own routing.
	general bool
	targets []target
}

type target struct {
	clientID string
	sub      packets.Subscription
}

// maxRoutes bounds the cache; past it, the cache starts over.
const maxRoutes = 1 << 16

func newRoutes(srv *mqtt.Server) *routes {
	return &routes{srv: srv, byName: make(map[string]route)}
}

// invalidate forgets every cached route.
func (r *routes) invalidate() { r.gen.Add(1) }

// generation changes whenever a cached route may have: both counts only
// grow.
func (r *routes) generation() uint64 {
	if r.cluster == nil {
		return r.gen.Load()
	}
	return r.gen.Load() + r.cluster.RoutesVersion()
}

func (r *routes) lookup(topic string) route {
	gen := r.generation()
	r.mu.RLock()
	rt, ok := r.byName[topic]
	r.mu.RUnlock()
	if ok && rt.gen == gen {
		return rt
	}
	return r.fill(topic, gen)
}

// subscriptionOf returns the subscription of the client clientID that
// matches topic (the client's matching filters merged into one, as
// routing delivers them), if it has one. Shared subscriptions do not
// count: a message through one goes to one member of the group.
func (r *routes) subscriptionOf(clientID, topic string) (packets.Subscription, bool) {
	for _, t := range r.lookup(topic).targets {
		if t.clientID == clientID {
			return t.sub, true
		}
	}
	return packets.Subscription{}, false
}

// ownRoute is the route of a requester's responses when the requester is
// the only subscriber of their topic, as it is of the response topic the
// protocol recommends. It is kept on the requester's connection
// (Client.Attached): with thousands of busy connections, finding the
// topic in the map of every route and then the client by its id cost a
// handful of cache misses per response, where the connection itself is
// in the cache already. An ownRoute is never changed once stored.
type ownRoute struct {
	topic string
	gen   uint64
	sub   packets.Subscription
}

// newOwnRoute returns the own route of topic, with a copy of it.
func newOwnRoute(topic string, gen uint64, sub packets.Subscription) *ownRoute {
	// The topic may be in the request's memory, which the connection
	// reuses for its next packet.
	return &ownRoute{topic: strings.Clone(topic), gen: gen, sub: sub}
}

// forRequester returns the route of topic: as the requester's own route
// when the requester is its only subscriber, still holds its session
// (not taken over by a new connection, which the client id then names)
// and may receive the topic, otherwise as the route to look its
// subscribers up in.
func (r *routes) forRequester(requester *mqtt.Client, topic string) (*ownRoute, route) {
	if requester.IsTakenOver() {
		return nil, r.lookup(topic)
	}
	if o, _ := requester.Attached.Load().(*ownRoute); o != nil && o.gen == r.generation() && o.topic == topic {
		return o, route{}
	}
	rt := r.lookup(topic)
	if rt.general || len(rt.targets) != 1 || rt.targets[0].clientID != requester.ID {
		return nil, rt
	}
	// The ACL check of every delivery is made here, once for the route:
	// responses on it are written without one.
	if !r.srv.CheckACL(requester, topic, false) {
		return nil, rt
	}
	o := newOwnRoute(topic, rt.gen, rt.targets[0].sub)
	requester.Attached.Store(o)
	return o, route{}
}

// sendableIdentifiers returns the subscription identifiers a delivery
// carries: a subscription merged from several filters lists those
// without one as 0, which is never sent. The broker would range over the
// map for every response; a route keeps only what it sends (nil, most
// often), in a map of its own.
func sendableIdentifiers(ids map[string]int) map[string]int {
	var out map[string]int
	for filter, id := range ids {
		if id > 0 {
			if out == nil {
				out = make(map[string]int)
			}
			out[filter] = id
		}
	}
	return out
}

// fill looks topic up in the broker's topic trie and caches the route.
// It is a function of its own so that what the lookup needs is not in the
// frame of every response (which grew every connection's stack).
//
//go:noinline
func (r *routes) fill(topic string, gen uint64) route {
	subs := r.srv.Topics.Subscribers(topic)
	rt := route{gen: gen, general: len(subs.Shared) > 0 || len(subs.InlineSubscriptions) > 0 || r.elsewhere(topic)}
	for id, sub := range subs.Subscriptions {
		sub.Identifiers = sendableIdentifiers(sub.Identifiers)
		rt.targets = append(rt.targets, target{clientID: id, sub: sub})
	}
	r.mu.Lock()
	if len(r.byName) >= maxRoutes {
		r.byName = make(map[string]route)
	}
	// The topic may point into a response's memory, which is recycled.
	r.byName[strings.Clone(topic)] = rt
	r.mu.Unlock()
	return rt
}

// elsewhere reports whether another node of the cluster has a route for
// topic.
func (r *routes) elsewhere(topic string) bool {
	if r.cluster == nil {
		return false
	}
	m := matchesPool.Get().(*pubsub.Matches)
	defer matchesPool.Put(m)
	r.cluster.Match(topic, m)
	return len(m.Nodes) > 0 || len(m.Groups) > 0
}
