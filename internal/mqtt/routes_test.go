// SPDX-License-Identifier: MIT

package mqtt

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// routeClients returns the ids of rt's clients, sorted, with the QoS of
// each.
func routeClients(rt *Route) []string {
	var out []string
	for _, c := range rt.Clients {
		out = append(out, fmt.Sprintf("%s:%d", c.ID, c.Sub.Qos))
	}
	slices.Sort(out)
	return out
}

func TestARouteFollowsTheSubscriptions(t *testing.T) {
	x := NewTopicsIndex()
	require.Empty(t, x.Route("a/b").Clients)

	x.Subscribe("a", packets.Subscription{Filter: "a/+", Qos: 1})
	require.Equal(t, []string{"a:1"}, routeClients(x.Route("a/b")))
	require.False(t, x.Route("a/b").General)

	x.Subscribe("b", packets.Subscription{Filter: "a/b"})
	require.Equal(t, []string{"a:1", "b:0"}, routeClients(x.Route("a/b")))

	// A subscription renewed with other options.
	x.Subscribe("b", packets.Subscription{Filter: "a/b", Qos: 2})
	require.Equal(t, []string{"a:1", "b:2"}, routeClients(x.Route("a/b")))

	// A client's filters merged, as routing delivers them.
	x.Subscribe("a", packets.Subscription{Filter: "a/#", Qos: 2, Identifier: 7})
	rt := x.Route("a/b")
	require.Equal(t, []string{"a:2", "b:2"}, routeClients(rt))
	for _, c := range rt.Clients {
		if c.ID == "a" {
			require.Equal(t, map[string]int{"a/#": 7}, c.Sub.Identifiers, "identifiers without 0s")
		}
	}

	require.True(t, x.Unsubscribe("a/+", "a"))
	require.True(t, x.Unsubscribe("a/#", "a"))
	require.Equal(t, []string{"b:2"}, routeClients(x.Route("a/b")))

	// Shared and inline subscriptions are the server's routing's.
	x.Subscribe("c", packets.Subscription{Filter: "$share/g/a/b"})
	require.True(t, x.Route("a/b").General)
	require.Equal(t, []string{"b:2"}, routeClients(x.Route("a/b")), "a shared subscription is not a route's client")
	x.Unsubscribe("$share/g/a/b", "c")
	require.False(t, x.Route("a/b").General)
	x.InlineSubscribe(InlineSubscription{Subscription: packets.Subscription{Filter: "a/b", Identifier: 1}})
	require.True(t, x.Route("a/b").General)
	x.InlineUnsubscribe(1, "a/b")
	require.False(t, x.Route("a/b").General)
}

func TestARouteIsKeptUntilTheSubscriptionsChange(t *testing.T) {
	x := NewTopicsIndex()
	x.Subscribe("a", packets.Subscription{Filter: "a/b"})
	rt := x.Route("a/b")
	require.Same(t, rt, x.Route("a/b"))
	v := x.RoutesVersion()
	require.Equal(t, v, rt.Version())

	x.Subscribe("b", packets.Subscription{Filter: "other"})
	require.NotEqual(t, v, x.RoutesVersion())
	require.NotSame(t, rt, x.Route("a/b"))
	require.Equal(t, x.RoutesVersion(), x.Route("a/b").Version())
}

// TestARouteEndsWithItsSession: a session that ends takes its
// subscriptions out of the routes.
func TestARouteEndsWithItsSession(t *testing.T) {
	s := newServer()
	defer s.Close()
	cl, _, _ := newTestClient()
	cl.ID = "zen"
	s.Clients.Add(cl)
	for _, f := range []string{"a/b", "a/+"} {
		sub := packets.Subscription{Filter: f}
		cl.State.Subscriptions.Add(f, sub)
		s.Topics.Subscribe(cl.ID, sub)
	}
	require.Equal(t, []string{"zen:0"}, routeClients(s.Topics.Route("a/b")))
	s.UnsubscribeClient(cl)
	require.Empty(t, s.Topics.Route("a/b").Clients)
}

func TestARouteHeedsTheClustersRoutes(t *testing.T) {
	r := &fakeRemote{routes: map[string]bool{}}
	s := newRemoteServer(r)
	defer s.Close()
	s.Topics.Subscribe("a", packets.Subscription{Filter: "a/b"})
	require.False(t, s.Topics.Route("a/b").General)

	// Another node subscribes: its routes change.
	r.mu.Lock()
	r.routes["a/b"] = true
	r.mu.Unlock()
	r.version.Add(1)
	rt := s.Topics.Route("a/b")
	require.True(t, rt.General)
	require.Equal(t, []string{"a:0"}, routeClients(rt))
}

// TestRoutesUnderConcurrentChanges: routes asked for while the
// subscriptions change are, once the changes are over, those of the
// subscriptions as they are.
func TestRoutesUnderConcurrentChanges(t *testing.T) {
	x := NewTopicsIndex()
	topics := []string{"t/0", "t/1", "t/2", "t/3"}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("c", w)
			for i := 0; i < 300; i++ {
				f := topics[i%len(topics)]
				if i%3 == 2 {
					x.Unsubscribe(f, id)
				} else {
					x.Subscribe(id, packets.Subscription{Filter: f, Qos: byte(i % 3)})
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				_ = x.Route(topics[i%len(topics)])
			}
		}()
	}
	wg.Wait()
	for _, topic := range topics {
		var want []string
		for id, sub := range x.Subscribers(topic).Subscriptions {
			want = append(want, fmt.Sprintf("%s:%d", id, sub.Qos))
		}
		slices.Sort(want)
		require.Equal(t, want, routeClients(x.Route(topic)), topic)
	}
}

// TestAFullRouteCacheKeepsItsRoutes: past maxRoutes topics the cache
// takes no more routes (routing finds the others in the trie) rather
// than start over at every new topic; when the subscriptions change,
// its routes are all stale and it starts over.
func TestAFullRouteCacheKeepsItsRoutes(t *testing.T) {
	x := NewTopicsIndex()
	x.Subscribe("a", packets.Subscription{Filter: "s/+"})
	for i := range maxRoutes {
		require.NotNil(t, x.routeIfCacheable(fmt.Sprint("s/", i)))
	}
	first := x.Route("s/0")
	require.Nil(t, x.routeIfCacheable("s/new"), "a full cache took a route")
	rt := x.Route("s/new")
	require.Equal(t, []string{"a:0"}, routeClients(rt), "a route past a full cache is still made")
	require.Same(t, first, x.Route("s/0"), "a full cache lost a route")

	x.Subscribe("b", packets.Subscription{Filter: "s/#"})
	rt = x.routeIfCacheable("s/new")
	require.NotNil(t, rt, "the cache did not start over when its routes went stale")
	require.Equal(t, []string{"a:0", "b:0"}, routeClients(rt))
	require.Same(t, rt, x.Route("s/new"))
}
