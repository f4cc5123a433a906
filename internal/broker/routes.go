package broker

import (
	"strings"
	"sync/atomic"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"
)

// The broker core's topic index says who receives a topic
// (mqtt.TopicsIndex.Route, kept until the subscriptions change); the
// broker adds the route of a requester's own responses, kept on its
// connection.

// subscriptionOf returns the subscription of the client clientID that
// matches topic (the client's matching filters merged into one, as
// routing delivers them), if it has one. Shared subscriptions do not
// count: a message through one goes to one member of the group.
func (b *Broker) subscriptionOf(clientID, topic string) (packets.Subscription, bool) {
	for _, c := range b.srv.Topics.Route(topic).Clients {
		if c.ID == clientID {
			return c.Sub, true
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
	topic   string
	version uint64 // ownRoutes.version when it was made
	sub     packets.Subscription
}

// newOwnRoute returns the own route of topic, with a copy of it.
func newOwnRoute(topic string, version uint64, sub packets.Subscription) *ownRoute {
	// The topic may be in the request's memory, which the connection
	// reuses for its next packet.
	return &ownRoute{topic: strings.Clone(topic), version: version, sub: sub}
}

// ownRoutes tells whether an own route is still current: its topic's
// route has not changed, nor the grants it was checked against.
type ownRoutes struct {
	topics *mqtt.TopicsIndex
	grants atomic.Uint64 // bumped when the grants change
}

// version changes whenever an own route may have: both counts only grow.
func (o *ownRoutes) version() uint64 { return o.topics.RoutesVersion() + o.grants.Load() }

// forRequester returns the route of topic: as the requester's own route
// when the requester is its only subscriber, still holds its session
// (not taken over by a new connection, which the client id then names)
// and may receive the topic, otherwise as the route to look its
// subscribers up in.
func (b *Broker) forRequester(requester *mqtt.Client, topic string) (*ownRoute, *mqtt.Route) {
	if requester.IsTakenOver() {
		return nil, b.srv.Topics.Route(topic)
	}
	if o, _ := requester.Attached.Load().(*ownRoute); o != nil && o.version == b.own.version() && o.topic == topic {
		return o, nil
	}
	grants := b.own.grants.Load() // before the check below
	rt := b.srv.Topics.Route(topic)
	if rt.General || len(rt.Clients) != 1 || rt.Clients[0].ID != requester.ID {
		return nil, rt
	}
	// The ACL check of every delivery is made here, once for the route:
	// responses on it are written without one.
	if !b.srv.CheckACL(requester, topic, false) {
		return nil, rt
	}
	o := newOwnRoute(topic, rt.Version()+grants, rt.Clients[0].Sub)
	requester.Attached.Store(o)
	return o, nil
}
