// SPDX-License-Identifier: MIT

package mqtt

import "strings"

// dss: topics and filters from clients are bounded in levels
// (Options.MaxTopicLevels) and in length (Options.MaxTopicLength), and
// refused past them before anything is done with them: a SUBSCRIBE or
// UNSUBSCRIBE filter with SUBACK or UNSUBACK 0x8F, a PUBLISH with PUBACK
// or PUBREC 0x90 (MQTT 5, QoS 1 and 2; a QoS 0 publish is dropped; an
// MQTT 3.1.1 client is disconnected), a Will with CONNACK 0x90. Each
// level of a filter is a node of the topic index, with its own memory:
// one SUBSCRIBE of a filter of 30,001 levels held 18 MB.

// DefaultMaxTopicLevels is Options.MaxTopicLevels when it is 0:
// Mosquitto's bound (CVE-2019-11779), far above what topics use.
const DefaultMaxTopicLevels = 200

// nextLevel splits topic at its first '/': level is what comes before
// it, rest what comes after, and more whether there was one.
func nextLevel(topic string) (level, rest string, more bool) {
	i := strings.IndexByte(topic, '/')
	if i < 0 {
		return topic, "", false
	}
	return topic[:i], topic[i+1:], true
}

// skipLevels returns topic without its first n levels.
func skipLevels(topic string, n int) string {
	for ; n > 0; n-- {
		i := strings.IndexByte(topic, '/')
		if i < 0 {
			return ""
		}
		topic = topic[i+1:]
	}
	return topic
}

// topicLevels returns the number of levels of topic.
func topicLevels(topic string) int {
	return strings.Count(topic, "/") + 1
}

// topicBeyondLimits reports whether topic, a topic name or filter from a
// client, has more levels than o.MaxTopicLevels or more bytes than
// o.MaxTopicLength. A shared subscription's filter counts whole:
// $share/GROUP/ are two of its levels.
func (o *Options) topicBeyondLimits(topic string) bool {
	if o.MaxTopicLength > 0 && len(topic) > o.MaxTopicLength {
		return true
	}
	return o.MaxTopicLevels > 0 && topicLevels(topic) > o.MaxTopicLevels
}
