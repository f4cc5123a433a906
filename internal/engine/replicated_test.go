package engine

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// memLog is an in-memory replicated log: it keeps what is proposed until
// the test commits it, and then applies it on every node it replicates
// to, as a Raft log would.
type memLog struct {
	mu       sync.Mutex
	pending  []Write
	refuse   bool
	leader   *Node
	replicas []*Node
}

func (l *memLog) Propose(w *Write) Proposed {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refuse {
		return Refused
	}
	c := *w
	// The command aliases the request, which is reused once Propose
	// returns: a log keeps its own copy, as an encoded entry would be.
	c.Command.Key = bytes.Clone(w.Command.Key)
	c.Command.Value = bytes.Clone(w.Command.Value)
	l.pending = append(l.pending, c)
	return Pending
}

// commit applies everything proposed so far on every node.
func (l *memLog) commit() {
	l.mu.Lock()
	writes := l.pending
	l.pending = nil
	l.mu.Unlock()
	for _, r := range l.replicas {
		copies := make([]Write, len(writes))
		for i := range writes {
			copies[i] = writes[i]
			copies[i].Op = nil // only the proposer knows the request
		}
		r.ApplyCommitted(copies)
	}
	l.leader.ApplyCommitted(writes)
}

// lose gives up everything proposed so far, as a leader that lost its
// leadership does.
func (l *memLog) lose() {
	l.mu.Lock()
	writes := l.pending
	l.pending = nil
	l.mu.Unlock()
	var ops []*Op
	for _, w := range writes {
		if w.Op != nil {
			ops = append(ops, w.Op)
		}
	}
	l.leader.Abandon(ops)
}

func newReplicated(t *testing.T) (*memLog, *Node, *Node, *watchAll) {
	t.Helper()
	l := &memLog{}
	leader := newNode(t, Config{Log: l, Clock: hlc.NewClock("a", nil)})
	w := &watchAll{}
	replica := newNode(t, Config{Log: &memLog{refuse: true}, Clock: hlc.NewClock("b", nil), Notifier: w})
	l.leader, l.replicas = leader, []*Node{replica}
	return l, leader, replica, w
}

// submit submits r and returns a channel that receives its result.
func submit(n *Node, r wire.Request) <-chan Result {
	ch := make(chan Result, 1)
	op := &Op{Request: r, Timestamp: hlc.Timestamp{Wall: time.Now().UnixMilli(), Node: "c"}, HasTimestamp: true}
	op.Done = func(op *Op) { ch <- op.Result }
	n.Submit(context.Background(), op)
	return ch
}

func TestReplicatedWritesWaitForTheCommit(t *testing.T) {
	l, leader, replica, watched := newReplicated(t)
	var results []<-chan Result
	for i := 0; i < 50; i++ {
		results = append(results, submit(leader, set(fmt.Sprint("k", i%5), fmt.Sprint("v", i))))
	}
	for _, ch := range results {
		select {
		case r := <-ch:
			t.Fatalf("answered before the commit: %+v", r)
		default:
		}
	}
	if r := do(leader, wire.Request{Verb: wire.VerbGet, Key: []byte("k1")}, false); r.Found {
		t.Fatalf("the leader's machine holds a write that is not committed: %+v", r)
	}
	l.commit()
	var last hlc.Timestamp
	for i, ch := range results {
		r := <-ch
		if r.Err != nil || r.Outcome != store.Applied {
			t.Fatalf("write %d: %+v", i, r)
		}
		if !last.Before(r.Version) {
			t.Fatalf("write %d has version %v after %v", i, r.Version, last)
		}
		last = r.Version
	}
	// Both machines hold the same state, and the replica told its own
	// watchers of every change, in order.
	for i := 0; i < 5; i++ {
		get := wire.Request{Verb: wire.VerbGet, Key: []byte(fmt.Sprint("k", i))}
		a, b := do(leader, get, false), do(replica, get, false)
		if !a.Found || string(a.Value) != string(b.Value) || a.Version != b.Version {
			t.Fatalf("k%d: leader %q %v, replica %q %v", i, a.Value, a.Version, b.Value, b.Version)
		}
	}
	waitFor(t, "the replica's notifications", func() bool {
		watched.mu.Lock()
		defer watched.mu.Unlock()
		return len(watched.changes) == 50
	})
	for i, c := range watched.changes {
		if want := fmt.Sprint("v", i); string(c.Value) != want {
			t.Fatalf("notification %d is %q, want %q", i, c.Value, want)
		}
	}
	// The replica's clock is above every version it applied: if it
	// became the leader, it would decide later versions.
	if v := replica.clock.Now(); !last.Before(v) {
		t.Fatalf("the replica's clock issues %v after applying %v", v, last)
	}
}

func TestAbandonedWritesAreUnavailable(t *testing.T) {
	l, leader, _, _ := newReplicated(t)
	ch := submit(leader, set("k", "v"))
	l.lose()
	if r := <-ch; r.Err != wire.ErrUnavailable {
		t.Fatalf("a write the log gave up: %+v", r)
	}
	l.mu.Lock()
	l.refuse = true
	l.mu.Unlock()
	if r := <-submit(leader, set("k", "v")); r.Err != wire.ErrUnavailable {
		t.Fatalf("a write the log refuses: %+v", r)
	}
	// Requests the log took count against the bound until they are
	// answered: nothing is left over.
	waitFor(t, "every request counted out", func() bool {
		leader.mu.Lock()
		defer leader.mu.Unlock()
		return leader.undelivered == 0
	})
}

// TestReplicatedExpiryIsDecidedAtApply: the expiry that precedes a write
// on an expired key is decided when the write is applied, on every node,
// from the command's time.
func TestReplicatedExpiryIsDecidedAtApply(t *testing.T) {
	l, leader, _, watched := newReplicated(t)
	first := submit(leader, wire.Request{Verb: wire.VerbSet, Key: []byte("k"), Value: []byte("old"), PX: 1})
	l.commit()
	<-first
	time.Sleep(5 * time.Millisecond) // past the 1 ms deadline
	second := submit(leader, set("k", "new"))
	l.commit()
	if r := <-second; r.Outcome != store.Applied {
		t.Fatalf("SET over an expired key: %+v", r)
	}
	waitFor(t, "the replica's notifications", func() bool {
		watched.mu.Lock()
		defer watched.mu.Unlock()
		return len(watched.changes) >= 3
	})
	watched.mu.Lock()
	defer watched.mu.Unlock()
	c := watched.changes
	if !c[1].Deleted || string(c[2].Value) != "new" || !c[1].Version.Before(c[2].Version) {
		t.Fatalf("changes on the replica: %+v", c)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRestoreAnnouncesWatchedKeysThatChanged: a node that installs a
// snapshot tells its watchers of every watched key the snapshot changed
// (SET with the new value and version, DELETE with the snapshot's
// highest version), of no key that did not change, and before any
// change applied after it.
func TestRestoreAnnouncesWatchedKeysThatChanged(t *testing.T) {
	w := &watchAll{keys: []string{"same", "changed", "gone", "new", "never"}}
	n := newNode(t, Config{Notifier: w, Log: &memLog{}})
	v := func(wall int64) hlc.Timestamp { return hlc.Timestamp{Wall: wall, Node: "l"} }
	apply := func(m *store.Machine, op store.Op, key, value string, version hlc.Timestamp) {
		m.Apply(&store.Command{Op: op, Key: []byte(key), Value: []byte(value), Time: version.Wall, Version: version}, nil)
	}
	before := store.New()
	apply(before, store.OpSet, "same", "s", v(1))
	apply(before, store.OpSet, "changed", "old", v(2))
	apply(before, store.OpSet, "gone", "g", v(3))
	apply(before, store.OpSet, "unwatched", "u", v(4))
	n.Restore(before, 4)
	// The first restore announces the three watched keys it brings.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		w.mu.Lock()
		got := len(w.changes)
		if got == 3 {
			w.changes = nil
		}
		w.mu.Unlock()
		if got == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d announcements of the first restore, want 3", got)
		}
	}
	after := store.New()
	apply(after, store.OpSet, "same", "s", v(1))
	apply(after, store.OpSet, "changed", "new value", v(10))
	apply(after, store.OpSet, "new", "n", v(11))
	apply(after, store.OpSet, "unwatched", "u2", v(12))
	apply(after, store.OpDel, "x", "", v(13)) // raises the highest version
	n.Restore(after, 13)
	// A change applied after the restore comes after its announcements.
	n.ApplyCommitted([]Write{{Command: store.Command{Op: store.OpSet, Key: []byte("changed"), Value: []byte("later"), Time: 14, Version: v(14)}}})
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		got := append([]store.Change(nil), w.changes...)
		w.mu.Unlock()
		if len(got) >= 4 {
			want := map[string]string{
				"changed": "SET new value " + v(10).String(),
				"new":     "SET n " + v(11).String(),
				"gone":    "DELETE " + v(13).String(),
			}
			for _, c := range got[:3] {
				s := fmt.Sprintf("SET %s %s", c.Value, c.Version)
				if c.Deleted {
					s = "DELETE " + c.Version.String()
				}
				if want[c.Key] != s {
					t.Fatalf("restore announced %s as %q, want %q (all: %+v)", c.Key, s, want[c.Key], got)
				}
				delete(want, c.Key)
			}
			if last := got[3]; len(got) != 4 || last.Key != "changed" || string(last.Value) != "later" {
				t.Fatalf("after the announcements: %+v", got[3:])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("announcements: %+v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
