package mqtt

import (
	"fmt"
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// BenchmarkWhoReceives finds who receives a topic through the trie
// (Subscribers) and through the route cache (Route), on one topic and on
// more topics than the cache holds, which misses it every time.
func BenchmarkWhoReceives(b *testing.B) {
	for _, topics := range []int{1, 2 * maxRoutes} {
		index := NewTopicsIndex()
		index.Subscribe("sub", packets.Subscription{Filter: "sensors/+/temp"})
		index.Subscribe("all", packets.Subscription{Filter: "sensors/#"})
		names := make([]string, topics)
		for i := range names {
			names[i] = fmt.Sprintf("sensors/%d/temp", i)
		}
		b.Run(fmt.Sprint("subscribers/", topics, "topics"), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = index.Subscribers(names[i%topics])
			}
		})
		b.Run(fmt.Sprint("route/", topics, "topics"), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = index.Route(names[i%topics])
			}
		})
	}
}

// BenchmarkRouteLocal routes QoS 0 messages to two subscribers without
// a connection (a delivery that ends at once), on one topic and on more
// topics than the route cache holds.
func BenchmarkRouteLocal(b *testing.B) {
	for _, topics := range []int{1, 2 * maxRoutes} {
		b.Run(fmt.Sprint(topics, "topics"), func(b *testing.B) {
			s := newServer()
			for _, id := range []string{"sub", "all"} {
				cl, _, _ := newTestClient()
				cl.ID = id
				cl.Net.Conn = nil
				s.Clients.Add(cl)
			}
			s.Topics.Subscribe("sub", packets.Subscription{Filter: "sensors/+/temp"})
			s.Topics.Subscribe("all", packets.Subscription{Filter: "sensors/#"})
			names := make([]string, topics)
			for i := range names {
				names[i] = fmt.Sprintf("sensors/%d/temp", i)
			}
			pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, Payload: []byte("21.5")}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pk.TopicName = names[i%topics]
				s.routeLocal(&pk, nil, nil)
			}
		})
	}
}
