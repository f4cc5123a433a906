package auth

import (
	"testing"

	"github.com/dssio/dss/internal/wire"
)

func TestIsolationClasses(t *testing.T) {
	const notify = wire.ReservedPrefix + "/"
	me := NewIsolation("me") // HEX "6D65"
	for _, c := range []struct {
		x    string
		want Class
	}{
		{"clients/me/services/statestore/_any_/command/invoke/response", Own},
		{"clients/6D65/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response", Own},
		{"clients/me/#", Own},
		{"clients/me", Own},
		{"$share/g/clients/me/x", Own},
		{notify + "6D65/command/notify/+", Own},
		{notify + "6D65/command/notify/4B", Own},
		{notify + "6D65/#", Own},

		{"clients/you/x", Foreign},
		{"clients/+/x", Foreign},
		{"clients/#", Foreign},
		{"clients", Foreign},
		{"clients/", Foreign},
		{"$share/g/clients/you/x", Foreign},
		{notify + "796F75/command/notify/4B", Foreign},
		{notify + "+/command/notify/+", Foreign},
		{notify + "#", Foreign},
		{"clients/statestore/#", Foreign},
		{"clients/statestore", Foreign},
		{"clients/6D65X/x", Foreign},

		{"telemetry/me", Outside},
		{"#", Outside},
		{"+/me/x", Outside},
		{"clientsX/y", Outside},
		{wire.RequestTopic, Outside},
	} {
		if got := me.Class(c.x); got != c.want {
			t.Errorf("Class(%q) = %v, want %v", c.x, got, c.want)
		}
	}
	if me.MayPublish("clients/me/x") || me.MayPublish(notify+"6D65/command/notify/4B") || !me.MayPublish("telemetry/x") {
		t.Fatal("MayPublish: clients/ must be closed to every client's publishes, the rest open")
	}
}

func TestIsolationOfIdsThatAreNotOneLevel(t *testing.T) {
	// "statestore" would claim the reserved prefix, "a/b" or "+" other
	// levels: such ids have their hex namespace only.
	for _, id := range []string{"statestore", "a/b", "+", "#"} {
		i := NewIsolation(id)
		if i.Class(wire.ReservedPrefix+"/0000/command/notify/41") != Foreign {
			t.Errorf("id %q reaches another client's notifications", id)
		}
		if got := i.Class("clients/" + id + "/x"); got == Own {
			t.Errorf("id %q owns clients/%s/x", id, id)
		}
	}
	ab := NewIsolation("a/b")
	if ab.Class("clients/a/x") != Foreign {
		t.Fatal("id a/b owns clients/a/")
	}
}
