package e2e_test

import (
	"fmt"
	"testing"

	"github.com/eclipse/paho.golang/paho"
)

// A message published on one node reaches the matching subscribers on
// the other two with the QoS it has on one node (the lower of the
// publish's and the subscription's), once each, in the order published,
// wildcards included; a subscriber whose filter does not match gets
// nothing.
func TestClusterPublishReachesEveryNode(t *testing.T) {
	tc := startCluster(t, 3)
	n1, n2, n3 := tc.members[0], tc.members[1], tc.members[2]
	type subscriber struct {
		c      *mqttClient
		filter string
		qos    byte
	}
	var subs []subscriber
	for i, m := range []*member{n2, n3} {
		for _, s := range []struct {
			filter string
			qos    byte
		}{{"plant/line1/temp", 0}, {"plant/line1/temp", 1}, {"plant/+/temp", 2}, {"plant/#", 1}, {"#", 2}} {
			c := connectMQTT(t, m.mqtt, fmt.Sprintf("sub-%d-%d", i, len(subs)))
			c.sub(s.filter, s.qos)
			subs = append(subs, subscriber{c, s.filter, s.qos})
		}
	}
	other := connectMQTT(t, n3.mqtt, "not-matching")
	other.sub("plant/line2/#", 2)

	pub := connectMQTT(t, n1.mqtt, "publisher")
	const perQoS = 20
	for qos := byte(0); qos <= 2; qos++ {
		for i := 0; i < perQoS; i++ {
			pub.pub(&paho.Publish{Topic: "plant/line1/temp", QoS: qos, Payload: []byte(fmt.Sprintf("%d-%d", qos, i))})
		}
	}
	for _, s := range subs {
		for qos := byte(0); qos <= 2; qos++ {
			for i := 0; i < perQoS; i++ {
				p := s.c.next()
				want := fmt.Sprintf("%d-%d", qos, i)
				if string(p.Payload) != want || p.Topic != "plant/line1/temp" {
					t.Fatalf("%s (%s QoS %d): got %q on %s, want %q", s.c.id, s.filter, s.qos, p.Payload, p.Topic, want)
				}
				if wantQoS := min(qos, s.qos); p.QoS != wantQoS {
					t.Fatalf("%s (%s QoS %d): message %s with QoS %d, want %d", s.c.id, s.filter, s.qos, want, p.QoS, wantQoS)
				}
			}
		}
	}
	for _, s := range subs {
		s.c.none(0)
	}
	other.none(500 * 1e6)
}
