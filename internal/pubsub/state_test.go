package pubsub

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/dssio/dss/hlc"
)

type recorder struct {
	retained map[string]Retained
	claims   []claimChange
	restored int
}

func (r *recorder) RetainedChanged(topic string, x Retained) {
	if r.retained == nil {
		r.retained = map[string]Retained{}
	}
	r.retained[topic] = x
}
func (r *recorder) Claimed(client string, s Session) {
	r.claims = append(r.claims, claimChange{client, s})
}
func (r *recorder) Restored() { r.restored++ }

func stamp(wall int64, node string) hlc.Timestamp { return hlc.Timestamp{Wall: wall, Node: node} }

func apply(t *testing.T, s *State, build func(b *Batch)) {
	t.Helper()
	var b Batch
	build(&b)
	if err := s.Apply(b.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// Retained sets and clears made on different nodes reach the same message
// whatever order the log holds them in: the greatest stamp wins, and a
// clear keeps an older set from coming back.
func TestRetainedConvergesWhateverTheOrder(t *testing.T) {
	type change struct {
		stamp hlc.Timestamp
		msg   []byte
	}
	changes := []change{
		{stamp(10, "n1"), []byte("a")},
		{stamp(20, "n2"), nil},
		{stamp(15, "n3"), []byte("c")},
		{stamp(20, "n3"), []byte("d")}, // same wall: the node id orders
	}
	want := changes[3]
	for i := 0; i < 24; i++ {
		order := rand.Perm(len(changes))
		rec := &recorder{}
		s := New(rec)
		for _, j := range order {
			c := changes[j]
			apply(t, s, func(b *Batch) { b.Retain("t", c.stamp, c.msg, 0, c.stamp.Wall) })
		}
		r, ok := s.Retained("t")
		if !ok || r.Stamp != want.stamp || !bytes.Equal(r.Message, want.msg) {
			t.Fatalf("order %v: %v %q, want %v %q", order, r.Stamp, r.Message, want.stamp, want.msg)
		}
		if got := rec.retained["t"]; !bytes.Equal(got.Message, want.msg) {
			t.Fatalf("order %v: the observer was last told %q", order, got.Message)
		}
	}
	// A clear newer than every set leaves none, and the count says so.
	s := New(nil)
	apply(t, s, func(b *Batch) {
		b.Retain("t", stamp(30, "n1"), nil, 0, 30)
		b.Retain("t", stamp(10, "n1"), []byte("old"), 0, 31)
	})
	if _, ok := s.Retained("t"); ok || s.RetainedCount() != 0 {
		t.Fatalf("a set older than the clear came back (%d retained)", s.RetainedCount())
	}
}

// The newest claim owns a client id whichever order claims are applied
// in; a claim that resumes a persistent session keeps its subscriptions,
// a clean one drops them; a release of an older connection changes
// nothing.
func TestClaimsOwnByStamp(t *testing.T) {
	s := New(nil)
	c1 := Claim{Client: "c", Node: "n1", Epoch: 1, Stamp: stamp(10, "n1"), Persistent: true, Expiry: 60}
	c2 := Claim{Client: "c", Node: "n2", Epoch: 7, Stamp: stamp(20, "n2"), Persistent: true, Expiry: 60}
	apply(t, s, func(b *Batch) {
		b.Claim(c1)
		b.Subscriptions("c", c1.Stamp, []byte("subs"))
		b.Claim(c2)
		b.Claim(c1) // late: older
		b.Release("c", c1.Stamp, true, 60, 25)
	})
	x, ok := s.Session("c")
	if !ok || x.Node != "n2" || !x.Connected || string(x.Subscriptions) != "subs" {
		t.Fatalf("session %+v", x)
	}
	c3 := c2
	c3.Node, c3.Stamp, c3.Clean = "n3", stamp(30, "n3"), true
	apply(t, s, func(b *Batch) { b.Claim(c3) })
	if x, _ := s.Session("c"); x.Node != "n3" || x.Subscriptions != nil {
		t.Fatalf("a clean claim kept %q", x.Subscriptions)
	}
	// Its node restarts: the session stays, disconnected, and expires.
	apply(t, s, func(b *Batch) { b.NodeStarted("n3", 99, 40) })
	x, _ = s.Session("c")
	if x.Connected || x.Ended != 40 {
		t.Fatalf("after its node restarted: %+v", x)
	}
	if got := s.Expired(40+59_000, 10); len(got) != 0 {
		t.Fatalf("expired before its time: %v", got)
	}
	exp := s.Expired(40+61_000, 10)
	if len(exp) != 1 {
		t.Fatalf("expired %v", exp)
	}
	apply(t, s, func(b *Batch) { b.Expire(exp) })
	if _, ok := s.Session("c"); ok {
		t.Fatal("session not expired")
	}
	// Another owner's claim does not take an id that is held.
	apply(t, s, func(b *Batch) {
		b.Claim(Claim{Client: "e", Node: "n1", Stamp: stamp(60, "n1"), Owner: "alice", Persistent: true, Expiry: 9})
		b.Claim(Claim{Client: "e", Node: "n2", Stamp: stamp(61, "n2"), Owner: "mallory"})
	})
	if x, _ := s.Session("e"); x.Owner != "alice" || x.Node != "n1" {
		t.Fatalf("another owner took the id: %+v", x)
	}
	apply(t, s, func(b *Batch) { b.Release("e", stamp(60, "n1"), false, 0, 62) })
	// A session that is not persistent goes with its connection.
	apply(t, s, func(b *Batch) {
		b.Claim(Claim{Client: "d", Node: "n1", Stamp: stamp(50, "n1")})
		b.Release("d", stamp(50, "n1"), false, 0, 51)
	})
	if s.SessionCount() != 0 {
		t.Fatalf("%d sessions left", s.SessionCount())
	}
}

// A retained message past its expiry is cleared by the command that
// names it, and only if it is still that message; a set older than the
// expired one stays out.
func TestRetainedExpiry(t *testing.T) {
	s := New(nil)
	apply(t, s, func(b *Batch) {
		b.Retain("a", stamp(1, "n1"), []byte("m"), 100, 1)
		b.Retain("b", stamp(1, "n1"), []byte("m"), 100, 1)
		b.Retain("b", stamp(2, "n2"), []byte("newer"), 0, 2)
		b.Retain("c", stamp(1, "n1"), []byte("forever"), 0, 1)
	})
	exp := s.ExpiredRetained(150, 10)
	if len(exp) != 1 || exp[0].Topic != "a" {
		t.Fatalf("expired: %v", exp)
	}
	apply(t, s, func(b *Batch) {
		b.ExpireRetained(append(exp, RetainedExpiry{Topic: "b", Stamp: stamp(1, "n1")}), 3)
		b.Retain("a", stamp(0, "n3"), []byte("older"), 0, 4)
	})
	if _, ok := s.Retained("a"); ok {
		t.Fatal("an expired message, or an older one, is still retained")
	}
	if r, ok := s.Retained("b"); !ok || string(r.Message) != "newer" {
		t.Fatal("a newer message was cleared by the expiry of the one it replaced")
	}
	if s.RetainedCount() != 2 {
		t.Fatalf("%d retained", s.RetainedCount())
	}
}

// A snapshot restores the same routes, retained messages and sessions.
func TestSnapshotRoundTrip(t *testing.T) {
	s := New(nil)
	apply(t, s, func(b *Batch) {
		b.Routes("n1", []string{"a/+", "$share/g/b/#"}, nil)
		b.Routes("n2", []string{"a/b"}, nil)
		b.Retain("a/b", stamp(1, "n1"), []byte("m"), 0, 1)
		b.Retain("a/c", stamp(2, "n1"), nil, 0, 2)
		b.Claim(Claim{Client: "c", Node: "n1", Epoch: 3, Stamp: stamp(3, "n1"), Persistent: true, Expiry: 9})
		b.Subscriptions("c", stamp(3, "n1"), []byte("s"))
	})
	snap := s.AppendSnapshot(nil)
	rec := &recorder{}
	r := New(rec)
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.AppendSnapshot(nil), snap) && !sameState(s, r) {
		t.Fatal("restored state differs")
	}
	if rec.restored != 1 {
		t.Fatal("observer not told of the restore")
	}
	var m Matches
	r.Match("a/b", &m)
	if len(m.Nodes) != 2 {
		t.Fatalf("routes after restore: %v", m.Nodes)
	}
	r.Match("b/x", &m)
	if len(m.Groups) != 1 || m.Groups[0].Nodes[0] != "n1" {
		t.Fatalf("shared routes after restore: %v", m.Groups)
	}
	if x, ok := r.Session("c"); !ok || string(x.Subscriptions) != "s" {
		t.Fatalf("session after restore: %+v", x)
	}
	if r.RetainedCount() != 1 {
		t.Fatalf("%d retained", r.RetainedCount())
	}
	if err := New(nil).Restore([]byte{9}); err == nil {
		t.Fatal("a state of another version was read")
	}
}

func sameState(a, b *State) bool {
	if len(a.routes) != len(b.routes) || len(a.retained) != len(b.retained) || len(a.sessions) != len(b.sessions) {
		return false
	}
	for n, fs := range a.routes {
		for f := range fs {
			if _, ok := b.routes[n][f]; !ok {
				return false
			}
		}
	}
	return true
}

// Apply refuses what it cannot read, and never panics on it.
func FuzzApply(f *testing.F) {
	var b Batch
	b.Routes("n1", []string{"a/#"}, []string{"b"})
	b.Retain("t", stamp(1, "n"), []byte("x"), 5e9, 1)
	b.ExpireRetained([]RetainedExpiry{{Topic: "t", Stamp: stamp(1, "n")}}, 2)
	b.Claim(Claim{Client: "c", Node: "n", Stamp: stamp(1, "n")})
	b.Release("c", stamp(1, "n"), true, 5, 2)
	b.NodeStarted("n", 1, 3)
	b.DropNode("n", 4)
	b.Expire([]Expiry{{Client: "c", Stamp: stamp(1, "n")}})
	f.Add(b.Bytes())
	f.Add([]byte{1, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := New(&recorder{})
		_ = s.Apply(data)
		snap := s.AppendSnapshot(nil)
		if err := New(nil).Restore(snap); err != nil {
			t.Fatalf("the state's own snapshot does not restore: %v", err)
		}
	})
}
