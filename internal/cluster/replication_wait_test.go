package cluster

import (
	"testing"
	"time"
)

// A client's request waits for the replicated broker state longer on a
// cluster whose timeouts were raised for a slow machine: with 2 s waits
// and a 2 s heartbeat timeout, a loaded machine's commit ran out of time
// and a resumed session lost its queued message.
func TestReplicationWaitFollowsTheHeartbeatTimeout(t *testing.T) {
	for _, c := range []struct {
		heartbeat, want time.Duration
	}{
		{0, 2 * time.Second}, // the default, 400 ms
		{100 * time.Millisecond, 2 * time.Second},
		{time.Second, 5 * time.Second},
		{2 * time.Second, 10 * time.Second},
	} {
		cfg := Config{NodeID: "n1", Listen: "127.0.0.1:0", DataDir: t.TempDir(), HeartbeatTimeout: c.heartbeat}
		if err := cfg.setDefaults(); err != nil {
			t.Fatal(err)
		}
		if got := (&Node{cfg: cfg}).ReplicationWait(); got != c.want {
			t.Errorf("heartbeat timeout %v: wait %v, want %v", c.heartbeat, got, c.want)
		}
	}
}
