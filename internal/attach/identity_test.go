package attach

import (
	"testing"

	"github.com/dssio/dss/internal/service"
)

func TestRequester(t *testing.T) {
	cases := []struct {
		srcID, topic, want string
	}{
		{"me", "anything", "me"},
		{"", "clients/dev-1/services/statestore/_any_/command/invoke/response", "dev-1"},
		{"", "clients/a/b/services/statestore/_any_/command/invoke/response", "a/b"},
		{"", "clients/6D79/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response", "my"},
		{"", "clients/6d79/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response", ""}, // lower-case hex is not the form
		{"", "clients/XYZ/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response", ""},
		{"", "clients//services/statestore/x", ""},
		{"", "replies/me", ""},
		{"", "clients/me/other", ""},
	}
	for _, c := range cases {
		env := service.Envelope{SourceID: c.srcID}
		if got := requester(&env, c.topic); got != c.want {
			t.Errorf("__srcId %q, topic %q: %q, want %q", c.srcID, c.topic, got, c.want)
		}
	}
}
