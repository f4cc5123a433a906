package e2e_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// TestClusterMembershipRefusesUnsafeChanges: with one node of three down,
// dss cluster refuses, and says why, to add a member that does not answer
// or to remove a running one (either would leave the cluster without a
// majority), removes the node that is down, and after a forced change that
// runs out of time says whether it took effect.
func TestClusterMembershipRefusesUnsafeChanges(t *testing.T) {
	tc := startCluster(t, 3)
	leader := tc.leader()
	c := dsstest.Dial(t, leader.mqtt, "writer")
	writeUntilOK(t, c, "before", "1")
	down := tc.others(leader)[0]
	down.proc.kill()
	up := tc.others(leader)[0]
	members := func() []string {
		st, err := tc.status(leader)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		var ids []string
		for _, m := range st.Members {
			ids = append(ids, m.ID)
		}
		return ids
	}
	// Through the leader and through a follower alike.
	for _, via := range []*member{leader, up} {
		out, err := dssCluster(t, nil, "add", "n5", dsstest.ClosedAddr(t), "--cluster-addr", via.cluster, "--timeout", "5s")
		if err == nil || !strings.Contains(out, "n5 at") || !strings.Contains(out, "does not answer") || !strings.Contains(out, "--force") {
			t.Fatalf("add of an unreachable member through %s: %v\n%s", via.id, err, out)
		}
		out, err = dssCluster(t, nil, "remove", up.id, "--cluster-addr", via.cluster, "--timeout", "5s")
		if err == nil || !strings.Contains(out, "would lose its majority") || !strings.Contains(out, down.id) {
			t.Fatalf("removal of a running member through %s with %s down: %v\n%s", via.id, down.id, err, out)
		}
		out, err = dssCluster(t, nil, "remove", "n9", "--cluster-addr", via.cluster, "--timeout", "5s")
		if err == nil || !strings.Contains(out, "no such member") {
			t.Fatalf("removal of a node that is no member through %s: %v\n%s", via.id, err, out)
		}
	}
	if ids := members(); len(ids) != 3 {
		t.Fatalf("members after the refused changes: %v", ids)
	}
	// Writes still work: the cluster kept its majority.
	writeUntilOK(t, c, "after-refusals", "2")

	// The status as JSON; and against an HTTP port, a message that says
	// what is wrong.
	out, err := dssCluster(t, nil, "status", "--json", "--cluster-addr", up.cluster)
	var st struct {
		Node    string `json:"node"`
		Member  bool   `json:"member"`
		Leader  string `json:"leader"`
		Members []struct {
			ID    string `json:"id"`
			State string `json:"state"`
			Error string `json:"error"`
		} `json:"members"`
	}
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.Node != up.id || !st.Member || st.Leader != leader.id || len(st.Members) != 3 {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	for _, m := range st.Members {
		if (m.ID == down.id) != (m.Error != "") {
			t.Fatalf("status --json: member %s: state %q error %q", m.ID, m.State, m.Error)
		}
	}
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	out, err = dssCluster(t, nil, "status", "--cluster-addr", strings.TrimPrefix(web.URL, "http://"), "--timeout", "3s")
	if err == nil || !strings.Contains(out, "HTTP server") || !strings.Contains(out, "--cluster-listen") {
		t.Fatalf("status against an HTTP port: %v\n%s", err, out)
	}

	// Removing the node that is down repairs the cluster.
	out, err = dssCluster(t, nil, "remove", down.id, "--cluster-addr", up.cluster, "--timeout", "10s")
	if err != nil {
		t.Fatalf("removal of the node that is down: %v\n%s", err, out)
	}
	if ids := members(); len(ids) != 2 {
		t.Fatalf("members after removing %s: %v", down.id, ids)
	}
	writeUntilOK(t, c, "after-removal", "3")

	// Forced, an unreachable member is added: with two of three voters
	// answering the cluster keeps its majority.
	out, err = dssCluster(t, nil, "add", "n6", dsstest.ClosedAddr(t), "--force", "--cluster-addr", leader.cluster, "--timeout", "10s")
	if err != nil {
		t.Fatalf("forced addition: %v\n%s", err, out)
	}
	// A second forced one leaves two of four: the change is logged but
	// cannot commit, and when --timeout runs out dss says that it took
	// effect.
	start := time.Now()
	out, err = dssCluster(t, nil, "add", "n7", dsstest.ClosedAddr(t), "--force", "--cluster-addr", leader.cluster, "--timeout", "3s")
	if err == nil || !strings.Contains(out, "no answer within --timeout 3s") || !strings.Contains(out, "took effect") || strings.Contains(out, "not taken effect") {
		t.Fatalf("forced addition that loses the majority (after %v): %v\n%s", time.Since(start), err, out)
	}
}

// TestClusterRemovedNodeStatus: the status asked of a node that was
// removed says so, and names the member that leads.
func TestClusterRemovedNodeStatus(t *testing.T) {
	tc := startCluster(t, 3)
	leader := tc.leader()
	gone := tc.others(leader)[0]
	if out, err := dssCluster(t, nil, "remove", gone.id, "--cluster-addr", leader.cluster); err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	var out string
	dsstest.Eventually(t, "the removed node's status to say so", func() bool {
		var err error
		out, err = dssCluster(t, nil, "status", "--cluster-addr", gone.cluster, "--timeout", "5s")
		return err == nil && strings.Contains(out, gone.id+" is not a member of the cluster")
	})
	if strings.Contains(out, "leader: (none)") || !strings.Contains(out, leader.id) {
		t.Fatalf("status of the removed node:\n%s", out)
	}
	t.Logf("status of the removed node:\n%s", out)
}
