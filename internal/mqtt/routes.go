// SPDX-License-Identifier: MIT

package mqtt

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: the index answers "who receives this topic" from a cache of
// routes by topic, so that a response of the state store does not walk
// the trie (nor allocate its result maps) every time. The index
// invalidates every route whenever its subscriptions change (a
// subscription made or removed, a session that ends or moves), and the
// Remote's routes (the subscriptions of the other nodes) count as well:
// changes are rare next to messages.

// Route is who receives a message on one topic. A Route is never changed
// once made: a change of the subscriptions makes a new one.
type Route struct {
	// Clients are the clients subscribed to filters that match the
	// topic, each with its matching subscriptions merged as routing
	// delivers them (not shared subscriptions: a message through one
	// goes to one member of its group).
	Clients []RouteClient
	// General marks a topic that also has shared or inline
	// subscriptions, or subscribers on other nodes (Options.Remote):
	// those only the server's routing serves.
	General bool
	version uint64
}

// RouteClient is a client of a Route, and its subscription to the
// topic.
type RouteClient struct {
	ID  string
	Sub packets.Subscription
}

// Version is the version of the routes the route is of.
func (r *Route) Version() uint64 { return r.version }

// routeCache holds the routes of the topics asked for.
type routeCache struct {
	// changes counts the changes of the index's subscriptions; bumped
	// after each, so that a route made from what a scan saw is never
	// taken for newer than it is.
	changes atomic.Uint64
	mu      sync.RWMutex
	byTopic map[string]*Route // guarded by mu
	// fullAt is the version at which byTopic was last made anew: full at
	// that version, it takes no more routes until the version changes.
	fullAt uint64 // guarded by mu
}

// maxRoutes bounds the cache. Full, it takes no more routes until the
// routes change, when it starts over (its routes are all stale then): a
// publisher on more topics than it holds does not make every lookup
// replace a route.
const maxRoutes = 1 << 16

// subscriptionsChanged invalidates every route.
func (x *TopicsIndex) subscriptionsChanged() { x.routes.changes.Add(1) }

// RoutesVersion returns a number that changes whenever a route may have:
// a route, or anything made of one, is current while it is unchanged.
func (x *TopicsIndex) RoutesVersion() uint64 {
	v := x.routes.changes.Load()
	if x.remote != nil {
		v += x.remote.RoutesVersion() // both only grow
	}
	return v
}

// Route returns who receives a message on topic.
func (x *TopicsIndex) Route(topic string) *Route {
	rt, v := x.cachedRoute(topic)
	if rt != nil {
		return rt
	}
	return x.fillRoute(topic, v)
}

// routeIfCacheable is Route for routing, which has a way of its own
// without the cache: nil when the cache holds no route of topic and has
// no room for one.
func (x *TopicsIndex) routeIfCacheable(topic string) *Route {
	rt, v := x.cachedRoute(topic)
	if rt != nil {
		return rt
	}
	x.routes.mu.RLock()
	full := len(x.routes.byTopic) >= maxRoutes && x.routes.fullAt == v
	x.routes.mu.RUnlock()
	if full {
		return nil
	}
	return x.fillRoute(topic, v)
}

// cachedRoute returns the cache's route of topic if it is current, and
// the current version.
func (x *TopicsIndex) cachedRoute(topic string) (*Route, uint64) {
	v := x.RoutesVersion()
	x.routes.mu.RLock()
	rt := x.routes.byTopic[topic]
	x.routes.mu.RUnlock()
	if rt != nil && rt.version == v {
		return rt, v
	}
	return nil, v
}

// fillRoute looks topic up in the trie and caches its route as of
// version v. It is a function of its own so that what the lookup needs
// is not in the frame of every response (which grew every connection's
// stack).
//
//go:noinline
func (x *TopicsIndex) fillRoute(topic string, v uint64) *Route {
	subs := x.Subscribers(topic)
	rt := &Route{
		version: v,
		General: len(subs.Shared) > 0 || len(subs.InlineSubscriptions) > 0 ||
			(x.remote != nil && x.remote.HasRoutes(topic)),
	}
	for id, sub := range subs.Subscriptions {
		sub.Identifiers = sendableIdentifiers(sub.Identifiers)
		rt.Clients = append(rt.Clients, RouteClient{ID: id, Sub: sub})
	}
	x.routes.mu.Lock()
	defer x.routes.mu.Unlock()
	if x.routes.byTopic == nil || len(x.routes.byTopic) >= maxRoutes {
		if x.routes.byTopic != nil && x.routes.fullAt == v {
			return rt // full of current routes
		}
		x.routes.byTopic = make(map[string]*Route)
		x.routes.fullAt = v
	}
	// The topic may point into a message's memory, which is recycled.
	x.routes.byTopic[strings.Clone(topic)] = rt
	return rt
}

// sendableIdentifiers returns the subscription identifiers a delivery
// carries: a subscription merged from several filters lists those
// without one as 0, which is never sent. A route keeps only what it
// sends (nil, most often), in a map of its own, so that a delivery does
// not range over the others.
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
