// SPDX-License-Identifier: MIT

package mqtt

import (
	"slices"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: the topic index is fuzzed with a filter and a topic under a
// common prefix of up to 5,000 levels, so that deep and long topics are
// tried from short inputs. Whatever the index says must agree with
// matchesFilter, written from the specification level by level, and an
// index whose subscriptions and retained messages are all removed must
// be empty again. The seed corpus is in testdata/fuzz/FuzzTopicsIndex.

// matchesFilter reports whether the topic name topic matches filter, as
// MQTT 5 section 4.7 says: + matches one level, # any number of them
// including none (so a/# matches a), and a filter whose first level is
// a wildcard does not match a topic that starts with '$'.
func matchesFilter(filter, topic string) bool {
	f, t := strings.Split(filter, "/"), strings.Split(topic, "/")
	if strings.HasPrefix(topic, "$") && (f[0] == "+" || f[0] == "#") {
		return false
	}
	for i, level := range f {
		if level == "#" {
			return true
		}
		if i >= len(t) || (level != "+" && level != t[i]) {
			return false
		}
	}
	return len(f) == len(t)
}

func FuzzTopicsIndex(f *testing.F) {
	f.Add("a/b/c", "a/b/c", uint16(0))
	f.Add("a/+/c", "a/b/c", uint16(3))
	f.Add("a/#", "a", uint16(0))
	f.Add("+/#", "a", uint16(0))
	f.Add("#", "$SYS/x", uint16(0))
	f.Add("+/+", "/", uint16(0))
	f.Add("a/b", "a/b/c", uint16(4999))
	f.Add("#", "x", uint16(30_000))
	f.Fuzz(func(t *testing.T, filter, topic string, depth uint16) {
		prefix := strings.Repeat("x/", int(depth%5000))
		filter, topic = prefix+filter, prefix+topic
		if !IsValidFilter(filter, false) || IsSharedFilter(filter) || topic == "" ||
			!IsValidFilter(topic, true) || strings.ContainsAny(topic, "+#") {
			return
		}
		want := matchesFilter(filter, topic)

		x := NewTopicsIndex()
		x.Subscribe("cl", packets.Subscription{Filter: filter, Qos: 1})
		x.InlineSubscribe(InlineSubscription{Subscription: packets.Subscription{Filter: filter, Identifier: 1}})
		subs := x.Subscribers(topic)
		if _, got := subs.Subscriptions["cl"]; got != want {
			t.Fatalf("Subscribers(%q) with a subscription to %q: %v, want %v", topic, filter, got, want)
		}
		if _, got := subs.InlineSubscriptions[1]; got != want {
			t.Fatalf("Subscribers(%q) with an inline subscription to %q: %v, want %v", topic, filter, got, want)
		}

		x.RetainMessage(packets.Packet{TopicName: topic, Payload: []byte("r"), FixedHeader: packets.FixedHeader{Retain: true}})
		if got := slices.Contains(x.RetainedTopics(filter, nil), topic); got != want {
			t.Fatalf("RetainedTopics(%q) with a message retained on %q: %v, want %v", filter, topic, got, want)
		}

		if !x.Unsubscribe(filter, "cl") || !x.InlineUnsubscribe(1, filter) {
			t.Fatalf("the subscription to %q was not found to remove", filter)
		}
		x.RetainMessage(packets.Packet{TopicName: topic})
		if n := x.root.particles.len(); n != 0 {
			t.Fatalf("%d levels left in an index emptied of %q and %q", n, filter, topic)
		}
	})
}
