package tuning

import "testing"

// Only a single node that syncs its journal before each response runs
// Go code on two threads on one CPU; a node of a cluster keeps one.
func TestTwoProcsOnlyForASingleNodeSyncingEveryWrite(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want bool
	}{
		{Options{SyncEveryWrite: true}, true},
		{Options{}, false},
		{Options{SyncEveryWrite: true, ClusterNode: true}, false},
		{Options{ClusterNode: true}, false},
	} {
		if got := c.o.twoProcs(); got != c.want {
			t.Errorf("%+v: two threads %v, want %v", c.o, got, c.want)
		}
	}
}
