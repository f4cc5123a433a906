package server_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// deepTopic returns a topic of levels levels: a/a/.../a.
func deepTopic(levels int) string {
	return strings.Repeat("a/", levels-1) + "a"
}

// TestDeepTopicsAreRefusedBeforeTheyCostAnything: clients that subscribe
// to a filter of 30,001 levels (60 KB), publish retained messages to a
// topic of 30,000 and unsubscribe from the filter are refused with the
// MQTT 5 reason codes (SUBACK 0x8F, PUBACK 0x90, UNSUBACK 0x8F), while
// a client beside them subscribes, publishes and makes requests as
// usual. Each such SUBSCRIBE cost seconds of CPU under the topic index's
// lock, which every other SUBSCRIBE and publish waited for.
func TestDeepTopicsAreRefusedBeforeTheyCostAnything(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	deepFilter := deepTopic(30_001)
	deepName := deepTopic(30_000)
	const attackers = 4
	var wg sync.WaitGroup
	codes := make(chan string, 3*attackers)
	for i := range attackers {
		c := dsstest.DialNoSubscribe(t, s.Addr(), "attacker-"+string(rune('a'+i)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			// paho returns the acknowledgement, and an error for its
			// failure code.
			sa, _ := c.Paho.Subscribe(t.Context(), &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: deepFilter, QoS: 1}}})
			if sa == nil || len(sa.Reasons) != 1 || sa.Reasons[0] != 0x8F {
				codes <- fmt.Sprintf("SUBSCRIBE: %+v, not refused with 0x8F", sa)
			}
			pr, _ := c.Paho.Publish(t.Context(), &paho.Publish{Topic: deepName, QoS: 1, Retain: true, Payload: []byte("x")})
			if pr == nil || pr.ReasonCode != 0x90 {
				codes <- fmt.Sprintf("PUBLISH: %+v, not refused with 0x90", pr)
			}
			ua, _ := c.Paho.Unsubscribe(t.Context(), &paho.Unsubscribe{Topics: []string{deepFilter}})
			if ua == nil || len(ua.Reasons) != 1 || ua.Reasons[0] != 0x8F {
				codes <- fmt.Sprintf("UNSUBSCRIBE: %+v, not refused with 0x8F", ua)
			}
		}()
	}

	// The client beside them: a subscription, a message through it and a
	// request, each well within a bound no stall under the topic index's
	// lock would keep (a liveness bound, not a speed target).
	const bound = 5 * time.Second
	legit := dsstest.Dial(t, s.Addr(), "legit")
	start := time.Now()
	legit.Subscribe("plant/line-1/+")
	if pr := legit.PublishCode(&paho.Publish{Topic: "plant/line-1/temp", Payload: []byte("21")}); pr != 0 {
		t.Fatalf("legitimate publish: reason %#x", pr)
	}
	if p := legit.Next(); string(p.Payload) != "21" {
		t.Fatalf("legitimate message: %q", p.Payload)
	}
	expect(t, "SET", legit.Set([]string{"k", "v"}), "+OK\r\n", "any")
	if took := time.Since(start); took > bound {
		t.Fatalf("the legitimate client's subscription, message and request took %v beside the deep topics, more than %v", took, bound)
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		t.Error(c)
	}

	// At the bound a topic is taken; one level more is refused.
	atBound := dsstest.Dial(t, s.Addr(), "at-bound")
	if got := atBound.SubscribeCodes(deepTopic(200), deepTopic(201)); got[0] != 1 || got[1] != 0x8F {
		t.Fatalf("filters of 200 and 201 levels: SUBACK %#x, want 0x01 0x8F", got)
	}
	if got := atBound.PublishCode(&paho.Publish{Topic: deepTopic(201), Payload: []byte("x")}); got != 0x90 {
		t.Fatalf("publish to 201 levels: PUBACK %#x, want 0x90", got)
	}
	if got := atBound.PublishCode(&paho.Publish{Topic: deepTopic(200), Payload: []byte("x")}); got != 0 {
		t.Fatalf("publish to 200 levels: PUBACK %#x, want 0", got)
	}
	if p := atBound.Next(); p.Topic != deepTopic(200) {
		t.Fatalf("message on %d levels, want 200", strings.Count(p.Topic, "/")+1)
	}
}

// TestTopicLimitsAreSettings: --max-topic-levels and --max-topic-length
// refuse what is past them, a Will's topic included (CONNACK 0x90).
func TestTopicLimitsAreSettings(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{MaxTopicLevels: 3, MaxTopicLength: 10, HTTPListen: "127.0.0.1:0"})
	c := dsstest.DialNoSubscribe(t, s.Addr(), "c")
	if got := c.SubscribeCodes("a/b/c", "a/b/c/d", "abcdefghij", "abcdefghijk"); string(got) != "\x01\x8f\x01\x8f" {
		t.Fatalf("SUBACK %#x, want 0x01 0x8F 0x01 0x8F", got)
	}
	if got := c.PublishCode(&paho.Publish{Topic: "abcdefghijk", Payload: []byte("x")}); got != 0x90 {
		t.Fatalf("publish past the length: PUBACK %#x, want 0x90", got)
	}
	_, ca, err := dsstest.Connect(t, s.Addr(), "will", dsstest.Login{Will: &paho.WillMessage{Topic: "w/x/y/z", Payload: []byte("gone")}})
	if err != nil || ca == nil || ca.ReasonCode != 0x90 {
		t.Fatalf("a Will past the levels: CONNACK %v (%v), want 0x90", ca, err)
	}
	// Two filters, a publish and a Will.
	if got := metricValue(t, s, "dss_mqtt_topics_refused_total"); got != 4 {
		t.Fatalf("dss_mqtt_topics_refused_total %v, want 4", got)
	}
}
