package server_test

import (
	"context"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// TestResponsesCarryTheSubscriptionIdentifier subscribes to the response
// topic with a subscription identifier, once through one filter and once
// through two that overlap (one with an identifier, one without): the
// response carries the identifier, and only it.
func TestResponsesCarryTheSubscriptionIdentifier(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	for _, overlapping := range []bool{false, true} {
		name := map[bool]string{false: "one filter", true: "two filters"}[overlapping]
		t.Run(name, func(t *testing.T) {
			c := dsstest.DialNoSubscribe(t, s.Addr(), "ids-"+name[:3])
			c.ResponseTopic = "ids/" + c.ID + "/response"
			ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
			defer cancel()
			id := 7
			subscribe := []*paho.Subscribe{{
				Properties:    &paho.SubscribeProperties{SubscriptionIdentifier: &id},
				Subscriptions: []paho.SubscribeOptions{{Topic: c.ResponseTopic, QoS: 1}},
			}}
			if overlapping {
				subscribe = append(subscribe, &paho.Subscribe{
					Subscriptions: []paho.SubscribeOptions{{Topic: "ids/+/response", QoS: 1}},
				})
			}
			for _, sub := range subscribe {
				if _, err := c.Paho.Subscribe(ctx, sub); err != nil {
					t.Fatal(err)
				}
			}
			p := c.Set([]string{"k", "v"})
			expect(t, "k", p, "+OK\r\n", "any")
			if p.Properties.SubscriptionIdentifier == nil || *p.Properties.SubscriptionIdentifier != 7 {
				t.Fatalf("subscription identifier %v, want 7", p.Properties.SubscriptionIdentifier)
			}
		})
	}
}
