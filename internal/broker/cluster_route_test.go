package broker

import (
	"testing"

	"github.com/dssio/dss/internal/pubsub"
)

// TestOnlyOtherNodesRoutesLeaveATopicToTheRouting: a topic whose only
// route in the cluster is this node's own (its local subscribers, which
// the core knows) is routed by the core's routes, a state store response
// on its requester's own route among them; it went through the routing
// for other nodes, to none, at a cost the leader paid per write.
func TestOnlyOtherNodesRoutesLeaveATopicToTheRouting(t *testing.T) {
	ps := pubsub.New(nil)
	var b pubsub.Batch
	b.Routes("n1", []string{"clients/+/response", "$share/g/shared/#"}, nil)
	b.Routes("n2", []string{"elsewhere/#", "$share/h/both/#"}, nil)
	b.Routes("n1", []string{"$share/h/both/#"}, nil)
	if err := ps.Apply(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	sp := &spanning{ps: ps, self: "n1"}
	for topic, want := range map[string]bool{
		"clients/c1/response": false, // this node's own route only
		"shared/x":            false, // a group whose members are all here
		"elsewhere/x":         true,
		"both/x":              true, // a group with members on n2 too
		"nobody":              false,
	} {
		if got := sp.HasRoutes(topic); got != want {
			t.Errorf("HasRoutes(%q) = %v, want %v", topic, got, want)
		}
	}
	if other := (&spanning{ps: ps, self: "n2"}); !other.HasRoutes("clients/c1/response") {
		t.Error("n2 does not see n1's route")
	}
}
