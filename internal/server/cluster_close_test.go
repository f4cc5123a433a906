package server_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// A leader stopped while its writes are in flight leaves none of its
// goroutines behind. Raft leaves the future of an entry committed just
// before its shutdown unanswered for good; the node lets the entries in
// flight settle before it shuts Raft down, so that no goroutine of its
// own waits on such a future after it stopped.
func TestALeaderStoppedUnderWritesLeavesNoGoroutine(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			servers := startCluster(t, 3)
			lead := -1
			dsstest.Eventually(t, "a leader", func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				st, _, err := servers[0].ClusterStatus(ctx)
				for i := range servers {
					if err == nil && st.Leader == fmt.Sprint("n", i+1) {
						lead = i
						return true
					}
				}
				return false
			})
			c := dsstest.Dial(t, servers[lead].Addr(), "writer")
			for i := range 300 {
				c.Send(dsstest.Cmd("SET", fmt.Sprint("k", i%10), "v"), ts(dsstest.Now()))
			}
			ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
			defer cancel()
			if err := servers[lead].Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			// The others stop too: a node that runs may wait on a
			// future.
			for i, s := range servers {
				if i != lead {
					if err := s.Shutdown(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := waitingOnRaft(); n > 0 {
				t.Fatalf("%d goroutines wait on a Raft future after the cluster stopped", n)
			}
		})
	}
}

// waitingOnRaft counts the goroutines of the nodes in this process that
// wait on a Raft future.
func waitingOnRaft() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "cluster.(*Node).await.func1")
}
