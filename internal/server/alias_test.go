package server_test

import (
	"os"
	"testing"

	"github.com/eclipse/paho.golang/paho"
)

// aliased is a QoS 1 publish that sets or uses topic alias 1.
func aliased(topic, payload string) *paho.Publish {
	return &paho.Publish{QoS: 1, Topic: topic, Payload: []byte(payload),
		Properties: &paho.PublishProperties{TopicAlias: paho.Uint16(1)}}
}

// A publish through a topic alias is judged by the topic the alias
// stands for, under the grants in force when it is sent: an alias is
// not a way around a grant.
func TestAPublishThroughATopicAliasIsCheckedAgainstItsTopic(t *testing.T) {
	f := newAttackFixture(t)
	alice := f.dial(t, "alice-app", "alice")
	monitor := f.dial(t, "monitor-1", "monitor")
	monitor.Subscribe("#")

	if code := alice.PublishCode(aliased("apps/alice/status", "1")); code != 0 {
		t.Fatalf("publish setting the alias: PUBACK %#x", code)
	}
	if code := alice.PublishCode(aliased("", "2")); code != 0 {
		t.Fatalf("publish through the alias of a granted topic: PUBACK %#x, want 0", code)
	}
	for _, want := range []string{"1", "2"} {
		if m := monitor.Next(); m.Topic != "apps/alice/status" || string(m.Payload) != want {
			t.Fatalf("monitor received %s %q, want apps/alice/status %q", m.Topic, m.Payload, want)
		}
	}

	// The grant narrows to one-level topics: the alias's topic is no
	// longer granted, though an empty topic would match "+".
	narrowed := `
rules:
  - principals:
      usernames: [alice]
    brokerResources:
      - method: Connect
      - method: Publish
        topics: ["+"]
  - principals:
      usernames: [monitor]
    brokerResources:
      - method: Connect
      - method: Subscribe
        topics: ["#"]
`
	if err := os.WriteFile(f.policy, []byte(narrowed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Reload(); err != nil {
		t.Fatal(err)
	}
	if code := alice.PublishCode(aliased("", "3")); code != 0x87 {
		t.Fatalf("publish through the alias of a topic no longer granted: PUBACK %#x, want 0x87", code)
	}
	if code := alice.PublishCode(&paho.Publish{QoS: 1, Topic: "status", Payload: []byte("end")}); code != 0 {
		t.Fatalf("publish on a granted topic: PUBACK %#x", code)
	}
	if m := monitor.Next(); m.Topic != "status" {
		t.Fatalf("monitor received %s %q, want the sentinel on status", m.Topic, m.Payload)
	}
}
