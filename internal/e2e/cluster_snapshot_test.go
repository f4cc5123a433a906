//go:build unix

package e2e_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

// TestClusterSnapshotInstallNotifiesWatchers: a follower that was cut off
// (SIGSTOP) while the others wrote on and compacted their logs catches
// up by installing the leader's snapshot, and its KEYNOTIFY watcher hears
// of every watched key the snapshot changed: the final value and version
// of each key set meanwhile, DELETE for a key deleted meanwhile, nothing
// for a key left alone.
func TestClusterSnapshotInstallNotifiesWatchers(t *testing.T) {
	tc := startCluster(t, 3, "--cluster-snapshot-threshold", "64", "--cluster-trailing-logs", "16", "--cluster-snapshot-interval", "100ms")
	leader := tc.leader()
	follower := tc.others(leader)[0]
	w := dsstest.Dial(t, follower.mqtt, "watcher")
	w.Subscribe(wire.NotifyTopicFilter(w.ID))
	c := dsstest.Dial(t, leader.mqtt, "writer")
	const watched = 6
	for i := 0; i < watched; i++ {
		key := fmt.Sprint("w", i)
		if r := w.Request(dsstest.Cmd("KEYNOTIFY", key)); string(r.Payload) != "+OK\r\n" {
			t.Fatalf("KEYNOTIFY %s: %q", key, r.Payload)
		}
		request(t, c, dsstest.Cmd("SET", key, "before"), ts())
	}
	for i := 0; i < watched; i++ {
		w.Next() // the notifications of the writes before the pause
	}
	st, err := tc.status(leader)
	if err != nil {
		t.Fatal(err)
	}
	paused := st.CommitIndex
	failed := `msg="cluster peer unreachable" component=cluster peer=` + follower.id + " "
	before := strings.Count(leader.proc.out.String(), failed)
	if err := follower.proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follower.proc.cmd.Process.Signal(syscall.SIGCONT) })
	// Requests to the stopped follower wait in its sockets and reach it
	// when it resumes. Once its heartbeats time out, the leader sends it
	// at most one batch (64 entries) from where it stopped, again and
	// again: the writes after the next 100 never reach it as entries.
	dsstest.Eventually(t, "the leader to notice the pause", func() bool {
		return strings.Count(leader.proc.out.String(), failed) > before
	})
	for i := 0; i < 100; i++ {
		request(t, c, dsstest.Cmd("SET", fmt.Sprint("early", i), "x"), ts())
	}

	// Meanwhile: w0-w3 change (several times), w4 is deleted, w5 is left
	// alone, and enough other writes follow for the leader to snapshot
	// and drop the entries the follower misses from its log.
	final := map[string]string{}
	for round := 0; round < 3; round++ {
		for i := 0; i < 4; i++ {
			key, value := fmt.Sprint("w", i), fmt.Sprintf("r%d-%d", round, i)
			request(t, c, dsstest.Cmd("SET", key, value), ts())
			final[key] = value
		}
	}
	versions := map[string]hlc.Timestamp{}
	for i := 0; i < 4; i++ {
		key := fmt.Sprint("w", i)
		versions[key] = version(t, request(t, c, dsstest.Cmd("GET", key)))
	}
	if r := request(t, c, dsstest.Cmd("DEL", "w4"), ts()); string(r.Payload) != ":1\r\n" {
		t.Fatalf("DEL w4: %q", r.Payload)
	}
	for i := 0; i < 300; i++ {
		request(t, c, dsstest.Cmd("SET", fmt.Sprint("filler", i), "x"), ts())
	}
	dsstest.Eventually(t, "a snapshot of the leader past the follower's log", func() bool {
		return newestSnapshotIndex(t, leader.data) > paused+200
	})

	if err := follower.proc.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	dsstest.Eventually(t, "the follower to install the snapshot", func() bool {
		return strings.Contains(follower.proc.out.String(), "state restored from a Raft snapshot")
	})
	// The watcher hears of each changed key, in the end its final state.
	got := map[string]string{}
	want := map[string]string{"w4": "DELETE"}
	for key, value := range final {
		want[key] = fmt.Sprintf("SET %s %v", value, versions[key])
	}
	keyOf := map[string]string{}
	for i := 0; i < watched; i++ {
		key := fmt.Sprint("w", i)
		keyOf[wire.NotifyTopic(w.ID, []byte(key))] = key
	}
	deadline := time.Now().Add(dsstest.Timeout)
	for !mapsEqual(got, want) {
		if time.Now().After(deadline) {
			t.Fatalf("the watcher heard %v, want %v", got, want)
		}
		select {
		case p := <-w.Messages:
			key := keyOf[p.Topic]
			switch s := string(p.Payload); {
			case strings.Contains(s, "DELETE"):
				got[key] = "DELETE"
			default:
				value := s[strings.LastIndex(s[:len(s)-2], "\n")+1 : len(s)-2]
				got[key] = fmt.Sprintf("SET %s %v", value, version(t, p))
			}
			if key == "w5" {
				t.Fatalf("a notification of w5, which did not change: %q", p.Payload)
			}
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// newestSnapshotIndex returns the index of the newest Raft snapshot in a
// node's data directory (raft's snapshot directories are named
// TERM-INDEX-MILLISECONDS), 0 for none.
func newestSnapshotIndex(t *testing.T, data string) uint64 {
	entries, _ := os.ReadDir(data + "/raft/snapshots")
	var newest uint64
	for _, e := range entries {
		parts := strings.Split(e.Name(), "-")
		if len(parts) != 3 {
			continue
		}
		if i, err := strconv.ParseUint(parts[1], 10, 64); err == nil && i > newest {
			newest = i
		}
	}
	return newest
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
