// SPDX-License-Identifier: MIT

package mqtt

import (
	"strings"
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: the seam of a cluster of brokers (docs/adr/0009). The core stays a
// single broker; Options.Remote, when set, is told which filters have
// subscribers here and sees every message routed from here, and the
// binding delivers the messages of the other nodes and moves sessions
// between nodes through DeliverRemote, InstallSession and TakeSession.

// Remote is the rest of a cluster of brokers, as the core sees it.
type Remote interface {
	// FilterChanged is called when filter gets its first subscription
	// here (present) or loses its last one; a shared subscription's
	// filter is named by SharedRouteKey. It is called under the topic
	// index's lock: it must not block, nor call the server.
	FilterChanged(filter string, present bool)
	// Route is called with every message routed from here for a
	// publisher of this server (a client, a will, the server's own
	// client), before the local subscribers get it. It returns nil when
	// the message concerns no other node, and otherwise the message's
	// routing, which decides the local shared subscriptions and may have
	// the publisher's acknowledgement wait. pk is valid during the call.
	Route(pk *packets.Packet) Routed
	// HasRoutes reports whether a route of another node matches topic:
	// such a topic is left to the server's routing, which sends it there
	// (TopicsIndex.Route).
	HasRoutes(topic string) bool
	// RoutesVersion returns a number that grows whenever the cluster's
	// routes change.
	RoutesVersion() uint64
}

// Routed is one message's routing beyond this server.
type Routed interface {
	// Serves reports whether the local members of the shared
	// subscription key (SharedRouteKey) get the message.
	Serves(key string) bool
	// Await is called once the local subscribers have a QoS 1 or 2
	// message from client cl: it returns false when nothing is awaited,
	// and otherwise calls done once, from any goroutine, when the other
	// nodes that take the message have it; the core acknowledges the
	// publish then.
	Await(cl *Client, done func()) bool
}

// SharedRouteKey names the shared subscription of filter
// ($share/{group}/{filter}, the prefix in any case) as the routes do:
// with the prefix in lower case, so that members that wrote it
// differently are one group, as the topic index holds them.
func SharedRouteKey(filter string) string {
	if strings.HasPrefix(filter, "$share/") {
		return filter
	}
	return "$share/" + filter[len(SharePrefix)+1:]
}

// remoteRoute asks the Remote, if any, about pk before it is routed.
func (s *Server) remoteRoute(pk *packets.Packet) Routed {
	if s.Options.Remote == nil {
		return nil
	}
	return s.Options.Remote.Route(pk)
}

// keepServed drops from subs the shared subscriptions that r routes to
// members on other nodes.
func keepServed(subs *Subscribers, r Routed) {
	if r == nil {
		return
	}
	for filter := range subs.Shared {
		if !r.Serves(SharedRouteKey(filter)) {
			delete(subs.Shared, filter)
		}
	}
}

// publishAwaiting routes pk, a QoS 1 or 2 publish of cl, as
// publishToSubscribers does, and reports whether its acknowledgement ack
// is deferred until the other nodes have it: finishPublish runs then, on
// copies of both.
func (s *Server) publishAwaiting(cl *Client, pk, ack *packets.Packet) bool {
	var congested *Client
	var r Routed
	if pk.Ignore || s.Options.Remote == nil {
		congested = s.publishToSubscribers(pk, cl.Net.loop.round)
	} else {
		s.stampRouted(pk)
		r = s.Options.Remote.Route(pk)
		congested = s.routeLocal(pk, r, cl.Net.loop.round)
	}
	if congested != nil && congested != cl {
		// A subscriber that could not take it yet slows the publisher
		// (see backpressure.go).
		cl.State.flow.slowedBy.Store(congested)
	}
	return r != nil && s.awaitRoute(cl, r, *pk, *ack)
}

// awaitRoute has r call finishPublish with pk and ack once the other
// nodes have the message, if it awaits them; it reports whether it does.
//
// dss: the copies the wait keeps are made here, for the messages that
// go to other nodes: kept by publishAwaiting, whose closure captured
// them, both were on the heap for every QoS 1 or 2 publish, with or
// without a cluster.
func (s *Server) awaitRoute(cl *Client, r Routed, pk, ack packets.Packet) bool {
	return r.Await(cl, func() { _ = s.finishPublish(cl, &pk, &ack) })
}

// DeliverRemote delivers pk, a message another node of the cluster
// routed, to the subscribers here; serves decides which local shared
// subscriptions (SharedRouteKey) get it. The message is neither retained
// nor routed further: the node it came from did both.
func (s *Server) DeliverRemote(pk *packets.Packet, serves func(key string) bool) {
	pk.FixedHeader.Type = packets.Publish
	s.stampRouted(pk)
	s.routeLocal(pk, servedBy(serves), nil)
}

// servedBy is a Routed of a message from another node: its shared
// subscriptions as the sending node chose, nothing to await.
type servedBy func(key string) bool

func (f servedBy) Serves(key string) bool   { return f != nil && f(key) }
func (servedBy) Await(*Client, func()) bool { return false }

// clusterListener is the listener of a session installed from another
// node, until its connection takes it over.
const clusterListener = "cluster"

// InstallSession adds a session of client id without a connection, with
// the subscriptions and messages in flight another node held for it, so
// that the connection resuming it takes it over as a session of this
// server. version and expiry are its protocol version and session
// expiry interval, auth what authentication established of its owner
// (see Client.Auth and Options.MayTakeOver). It reports false, and
// installs nothing, when this server has a session of id already.
func (s *Server) InstallSession(id string, version byte, expiry uint32, auth any, subs []packets.Subscription, inflight []packets.Packet) bool {
	s.sessionMu.Lock()
	defer s.sessionMu.Unlock()
	if _, ok := s.Clients.Get(id); ok {
		return false
	}
	cl := s.NewClient(nil, clusterListener, id, false)
	cl.Properties.ProtocolVersion = version
	cl.Properties.Props.SessionExpiryInterval = expiry
	cl.Properties.Props.SessionExpiryIntervalFlag = true
	cl.Auth = auth
	cl.Stop(packets.ErrSessionTakenOver)
	for _, sub := range subs {
		if !IsValidFilter(sub.Filter, false) {
			continue
		}
		if s.Topics.Subscribe(id, sub) {
			atomic.AddInt64(&s.Info.Subscriptions, 1)
		}
		cl.State.Subscriptions.Add(sub.Filter, sub)
	}
	for i := range inflight {
		if cl.State.Inflight.Set(&inflight[i]) {
			atomic.AddInt64(&s.Info.Inflight, 1)
		}
	}
	s.Clients.Add(cl)
	return true
}

// TakeSession hands this server's session of client id to another node:
// when only (if not nil) accepts the client, its connection (if any) ends
// with DISCONNECT 0x8E (Session taken over), take is called with the
// session's subscriptions and messages in flight (valid during the call
// only), and the session is removed, and with it a will that waits for
// its delay. It reports whether a session was taken.
func (s *Server) TakeSession(id string, only func(cl *Client) bool, take func(subs []packets.Subscription, inflight []packets.Packet)) bool {
	s.sessionMu.Lock()
	cl, ok := s.Clients.Get(id)
	if !ok || cl.Net.Inline || only != nil && !only(cl) {
		s.sessionMu.Unlock()
		return false
	}
	// No delivery adds to the session once it is taken (see
	// Deliver): one that comes later has no successor here
	// and is dropped.
	cl.State.handover.Lock()
	cl.State.isTakenOver.Store(true)
	cl.State.handover.Unlock()
	filters := cl.State.Subscriptions.GetAll()
	if take != nil {
		subs := make([]packets.Subscription, 0, len(filters))
		for _, sub := range filters {
			subs = append(subs, sub)
		}
		take(subs, cl.State.Inflight.GetAll(false))
	}
	removed := make([]packets.Subscription, 0, len(filters))
	for filter, sub := range filters {
		cl.State.Subscriptions.Delete(filter)
		if s.Topics.Unsubscribe(filter, id) {
			atomic.AddInt64(&s.Info.Subscriptions, -1)
		}
		removed = append(removed, sub)
	}
	cl.ClearInflights()
	cl.State.Inflight.detach()
	s.Clients.Delete(id)
	// A new connection to the session, if only on another node, comes
	// before the will's delay passed: it is not sent [MQTT-3.1.3-9].
	s.loop.willDelayed.Delete(id)
	s.sessionMu.Unlock()
	if ev := s.Options.Subscriptions; ev != nil {
		ev.Unsubscribed(cl, &packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Unsubscribe}, Filters: removed})
	}
	if !cl.Closed() {
		_ = s.DisconnectClient(cl, packets.ErrSessionTakenOver) // [MQTT-3.1.4-3]
	}
	return true
}

// CancelWill drops the will of client id that waits for its delay, as a
// new connection to its session does [MQTT-3.1.3-9]: the session was
// resumed on another node.
func (s *Server) CancelWill(id string) {
	s.loop.willDelayed.Delete(id)
}

// filterChanged tells the Remote of a filter that got its first
// subscription here or lost its last; count is how many it has now.
func (x *TopicsIndex) filterChanged(filter string, count int, present bool) {
	if x.remote == nil {
		return
	}
	if present && count == 1 || !present && count == 0 {
		if IsSharedFilter(filter) {
			filter = SharedRouteKey(filter)
		}
		x.remote.FilterChanged(filter, present)
	}
}

// sharedGroupLen returns the members of group at the particle.
func (s *SharedSubscriptions) groupLen(group string) int {
	s.RLock()
	defer s.RUnlock()
	return len(s.internal[group])
}
