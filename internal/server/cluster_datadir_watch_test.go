package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// watchedNode is a node of a cluster started for a test of its files.
type watchedNode struct {
	s    *server.Server
	dir  string
	logs *dsstest.Buffer
}

// startWatchedCluster starts three nodes with a log each and an HTTP
// listener, and waits until all are ready. A node's Shutdown may fail
// with its storage's error: the test looks at that itself.
func startWatchedCluster(t *testing.T, base server.Config) []*watchedNode {
	t.Helper()
	addrs := freeAddrs(t, 3)
	var peers []cluster.Peer
	for i, a := range addrs {
		peers = append(peers, cluster.Peer{ID: fmt.Sprint("n", i+1), Addr: a})
	}
	var nodes []*watchedNode
	for i := range addrs {
		cfg := base
		w := &watchedNode{dir: t.TempDir(), logs: &dsstest.Buffer{}}
		cfg.NodeID, cfg.DataDir, cfg.Listen, cfg.HTTPListen = peers[i].ID, w.dir, "127.0.0.1:0", "127.0.0.1:0"
		cfg.Cluster.Listen, cfg.Cluster.Peers = addrs[i], peers
		cfg.Logger = slog.New(slog.NewTextHandler(w.logs, nil))
		s, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		w.s = s
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
			defer cancel()
			done := make(chan struct{})
			go func() { _ = s.Shutdown(ctx); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				for _, n := range nodes {
					fmt.Fprintf(os.Stderr, "=== log of %s\n%s\n", n.dir, n.logs)
				}
				panic("shutdown hangs")
			}
		})
		nodes = append(nodes, w)
	}
	dsstest.Eventually(t, "every node ready", func() bool {
		for _, n := range nodes {
			if n.s.Ready() != nil {
				return false
			}
		}
		return true
	})
	return nodes
}

// leaderIndex returns the index of the node that leads now.
func leaderIndex(t *testing.T, nodes []*watchedNode) int {
	t.Helper()
	i := -1
	dsstest.Eventually(t, "a leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, _, err := nodes[0].s.ClusterStatus(ctx)
		if err != nil {
			return false
		}
		for k, n := range nodes {
			if fmt.Sprint("n", k+1) == st.Leader && n.s.Ready() == nil {
				i = k
				return true
			}
		}
		return false
	})
	return i
}

// TestClusterNodeWhoseRaftLogGoesAwayStopsItsWrites: the segment a
// node's Raft log appends to is deleted, or moved away, while the cluster
// serves, on a follower and on the leader. That node acknowledges no
// write from then on, its /healthz answers 503 naming the file and its
// log says why at ERROR; it leaves Raft, and the other two go on serving
// writes. Before, the
// node went on acknowledging writes into a file no restart would read,
// and /healthz said 200.
func TestClusterNodeWhoseRaftLogGoesAwayStopsItsWrites(t *testing.T) {
	for _, role := range []string{"follower", "leader"} {
		for _, how := range []string{"deleted", "moved away"} {
			t.Run(role+" "+how, func(t *testing.T) {
				t.Parallel()
				nodes := startWatchedCluster(t, server.Config{})
				li := leaderIndex(t, nodes)
				vi := (li + 1) % 3
				if role == "leader" {
					vi = li
				}
				victim := nodes[vi]
				cl := dsstest.Dial(t, victim.s.Addr(), "writer")
				expect(t, "SET before", cl.Set([]string{"before", "v"}), "+OK\r\n", "any")
				segs, _ := filepath.Glob(filepath.Join(victim.dir, "raft", "log", "log-*.seg"))
				if len(segs) == 0 {
					t.Fatal("no segment")
				}
				seg := segs[len(segs)-1]
				if how == "deleted" {
					must(t, os.Remove(seg))
				} else {
					must(t, os.Rename(seg, seg+".moved"))
				}
				dsstest.Eventually(t, "/healthz fails", func() bool {
					code, body := dsstest.HTTPGet(t, victim.s.HTTPAddr(), "/healthz")
					return code == http.StatusServiceUnavailable && strings.Contains(body, seg)
				})
				// One at a time on the connection that wrote before, on a
				// fresh one, and pipelined.
				for i := range 5 {
					if p := cl.Set([]string{"after", fmt.Sprint(i)}); string(p.Payload) == "+OK\r\n" {
						t.Fatalf("write %d through the %s whose Raft log was %s was acknowledged", i, role, how)
					}
				}
				fresh := dsstest.Dial(t, victim.s.Addr(), "fresh")
				if p := fresh.Set([]string{"fresh", "v"}); string(p.Payload) == "+OK\r\n" {
					t.Fatalf("a write on a fresh connection through the %s was acknowledged", role)
				}
				var pipelined []chan *paho.Publish
				for i := range 20 {
					pipelined = append(pipelined, cl.Send(dsstest.Cmd("SET", "piped", fmt.Sprint(i)), paho.UserProperty{Key: wire.PropTimestamp, Value: dsstest.Now()}))
				}
				for i, ch := range pipelined {
					if p := cl.Await(ch); string(p.Payload) == "+OK\r\n" {
						t.Fatalf("pipelined write %d through the %s was acknowledged", i, role)
					}
				}
				if code, _ := dsstest.HTTPGet(t, victim.s.HTTPAddr(), "/readyz"); code != http.StatusServiceUnavailable {
					t.Fatalf("/readyz %d, want 503", code)
				}
				if l := victim.logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, seg) || !strings.Contains(l, "leaves Raft") {
					t.Fatalf("the log does not say what happened:\n%s", l)
				}
				// The two others serve writes, a new leader elected if it
				// was the leader.
				other := nodes[(vi+1)%3]
				oc := dsstest.Dial(t, other.s.Addr(), "other")
				dsstest.Eventually(t, "a write through another node", func() bool {
					return string(oc.Set([]string{"elsewhere", "v"}).Payload) == "+OK\r\n"
				})
			})
		}
	}
}

// TestClusterNodeRepairsItsTermAndSnapshot: a follower's term-and-vote
// file and its snapshots are removed while it serves. It writes the
// first again from memory and takes a snapshot again, says so at ERROR,
// and serves writes all along; a restart then finds both.
func TestClusterNodeRepairsItsTermAndSnapshot(t *testing.T) {
	var base server.Config
	base.Cluster.SnapshotThreshold = 16
	base.Cluster.SnapshotInterval = 100 * time.Millisecond
	nodes := startWatchedCluster(t, base)
	li := leaderIndex(t, nodes)
	victim := nodes[(li+1)%3]
	cl := dsstest.Dial(t, victim.s.Addr(), "writer")
	snaps := filepath.Join(victim.dir, "raft", "snapshots")
	// A snapshot is complete once its directory lost the .tmp suffix.
	snapshots := func() []string {
		m, _ := filepath.Glob(filepath.Join(snaps, "*", "state.bin"))
		var done []string
		for _, f := range m {
			if !strings.HasSuffix(filepath.Dir(f), ".tmp") {
				done = append(done, f)
			}
		}
		return done
	}
	dsstest.Eventually(t, "a snapshot on the follower", func() bool {
		expect(t, "SET", cl.Set([]string{"k", "v"}), "+OK\r\n", "any")
		return len(snapshots()) > 0
	})
	stable := filepath.Join(victim.dir, "raft", "stable")
	if _, err := os.Stat(stable); err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(stable))
	must(t, os.RemoveAll(snaps))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the node's log:\n%s", victim.logs)
		}
	})
	dsstest.Eventually(t, "both written again, and logged", func() bool {
		_, err := os.Stat(stable)
		l := victim.logs.String()
		return len(snapshots()) > 0 && err == nil &&
			strings.Contains(l, "term and vote file went away; written again") && strings.Contains(l, stable+" was deleted") &&
			strings.Contains(l, "snapshot went away; taken again")
	})
	if code, body := dsstest.HTTPGet(t, victim.s.HTTPAddr(), "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d %s, want 200", code, body)
	}
	expect(t, "SET after", cl.Set([]string{"k", "after"}), "+OK\r\n", "any")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
