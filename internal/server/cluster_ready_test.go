package server_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// A cluster node is ready only once it knows a leader: the first of three
// to start cannot elect one alone, and /readyz and dss_ready say so; once
// a majority runs, it is ready.
func TestReadyzInACluster(t *testing.T) {
	addrs := freeAddrs(t, 3)
	var peers []cluster.Peer
	for i, a := range addrs {
		peers = append(peers, cluster.Peer{ID: fmt.Sprint("n", i+1), Addr: a})
	}
	var logs dsstest.Buffer
	start := func(i int, httpListen string) *server.Server {
		return dsstest.StartServer(t, server.Config{
			NodeID:     peers[i].ID,
			DataDir:    t.TempDir(),
			HTTPListen: httpListen,
			Cluster:    server.ClusterConfig{Listen: addrs[i], Peers: peers},
			Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
		})
	}
	first := start(0, "127.0.0.1:0")
	// The start-up line names the cluster listener with the others.
	var line string
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, `msg="dss serving"`) {
			line = l
		}
	}
	if !strings.Contains(line, " cluster="+addrs[0]+" ") || !strings.Contains(line, " http="+first.HTTPAddr()+" ") {
		t.Errorf("start-up line %q lacks the cluster or HTTP listener", line)
	}
	code, body := dsstest.HTTPGet(t, first.HTTPAddr(), "/readyz")
	reason, notes, _ := strings.Cut(body, "\n")
	if code != http.StatusServiceUnavailable || reason != "not ready: "+cluster.ErrNoLeader.Error() {
		t.Fatalf("/readyz of one node of three: %d %q", code, body)
	}
	// And, line by line, the peers it cannot reach with messages.
	for l := range strings.Lines(notes) {
		if !strings.HasPrefix(l, "messages to n2 fail since ") && !strings.HasPrefix(l, "messages to n3 fail since ") {
			t.Fatalf("/readyz of one node of three: %d %q", code, body)
		}
	}
	if !metric(t, first, "dss_ready 0") {
		t.Fatal("dss_ready is not 0 without a leader")
	}
	// /healthz is about the process, not the cluster: it stays ok.
	if code, body := dsstest.HTTPGet(t, first.HTTPAddr(), "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz without a leader: %d %q", code, body)
	}

	start(1, "")
	start(2, "")
	dsstest.Eventually(t, "the first node ready once a majority runs", func() bool {
		code, body := dsstest.HTTPGet(t, first.HTTPAddr(), "/readyz")
		if code != http.StatusOK && !strings.HasPrefix(body, "not ready: cluster: ") {
			t.Fatalf("/readyz: %d %q", code, body)
		}
		return code == http.StatusOK && body == "ready\n"
	})
	if !metric(t, first, "dss_ready 1") {
		t.Fatal("dss_ready is not 1 once ready")
	}
}
