package cluster

import (
	"errors"
	"fmt"
	"net/rpc"
	"testing"

	"github.com/hashicorp/raft"
)

// A membership change asked for during an election waits for a leader;
// a change the leader refused is not tried again.
func TestMembershipChangeWaitsOnlyForALeader(t *testing.T) {
	for _, c := range []struct {
		err   error
		retry bool
	}{
		{ErrNoLeader, true},
		{fmt.Errorf("add: %w", raft.ErrNotLeader), true},
		{raft.ErrLeadershipLost, true},
		{rpc.ServerError(ErrNoLeader.Error()), true},
		{rpc.ServerError(raft.ErrNotLeader.Error()), true},
		{rpc.ErrShutdown, true},
		{rpc.ServerError("a member needs an id"), false},
		{raft.ErrRaftShutdown, false},
		{errors.New("configuration changed since 12 (latest is 14)"), false},
	} {
		if got := leaderMoved(c.err); got != c.retry {
			t.Errorf("leaderMoved(%q) = %v, want %v", c.err, got, c.retry)
		}
	}
}
