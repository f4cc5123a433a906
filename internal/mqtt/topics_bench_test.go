// SPDX-License-Identifier: MIT

package mqtt

import (
	"strconv"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// BenchmarkTopicLevels measures what a subscription (SUBSCRIBE and
// UNSUBSCRIBE), a publish (finding its subscribers) and a retained
// message (kept and found again by a subscriber to #) cost for a topic of
// 8 to 4,096 levels. ns/level stays about the same from one size to the
// next: the cost is linear in the levels (dss: it was quadratic, each
// level found by scanning the topic from its start again).
//
//	go test -run XXX -bench TopicLevels -count 6 ./internal/mqtt/
func BenchmarkTopicLevels(b *testing.B) {
	for _, levels := range []int{8, 64, 512, 4096} {
		topic := strings.Repeat("level/", levels-1) + "end"
		perLevel := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(levels), "ns/level")
		}
		b.Run("subscribe/levels="+strconv.Itoa(levels), func(b *testing.B) {
			x := NewTopicsIndex()
			sub := packets.Subscription{Filter: topic, Qos: 1}
			b.ReportAllocs()
			for b.Loop() {
				x.Subscribe("cl", sub)
				x.Unsubscribe(topic, "cl")
			}
			perLevel(b)
		})
		b.Run("publish/levels="+strconv.Itoa(levels), func(b *testing.B) {
			x := NewTopicsIndex()
			x.Subscribe("cl1", packets.Subscription{Filter: topic, Qos: 1})
			x.Subscribe("cl2", packets.Subscription{Filter: "level/+/#", Qos: 1})
			b.ReportAllocs()
			for b.Loop() {
				if len(x.Subscribers(topic).Subscriptions) != 2 {
					b.Fatal("subscribers not found")
				}
			}
			perLevel(b)
		})
		b.Run("retain/levels="+strconv.Itoa(levels), func(b *testing.B) {
			x := NewTopicsIndex()
			pk := packets.Packet{TopicName: topic, Payload: []byte("r"), FixedHeader: packets.FixedHeader{Retain: true}}
			var found []string
			b.ReportAllocs()
			for b.Loop() {
				x.RetainMessage(pk)
				if found = x.RetainedTopics("#", found[:0]); len(found) != 1 {
					b.Fatal("retained message not found")
				}
			}
			perLevel(b)
		})
	}
}
