package attach

import (
	"testing"
	"time"

	"github.com/dssio/dss/internal/service"
	"github.com/dssio/dss/internal/wire"
)

func TestRecentRemembersByContent(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	r := newRecent(time.Minute, clock.Now)
	env := service.Envelope{Timestamp: "1:0:a", HasTimestamp: true}
	k := r.keyOf("c", []byte("corr"), []byte("SET k v"), &env)
	if _, seen := r.begin(k); seen {
		t.Fatal("a new request was seen")
	}
	if e, seen := r.begin(k); !seen || e.done {
		t.Fatalf("the same request: seen %v, done %v", seen, e.done)
	}
	r.finish(k, wire.VerbSet, nil, []byte("+OK\r\n"), nil)
	if e, _ := r.begin(k); !e.done || !e.kept || string(e.payload) != "+OK\r\n" {
		t.Fatalf("after its answer: %+v", e)
	}
	// Another content, another client, other correlation data: new.
	other := service.Envelope{Timestamp: "2:0:a", HasTimestamp: true}
	for _, k2 := range []requestKey{
		r.keyOf("c", []byte("corr"), []byte("SET k w"), &env),
		r.keyOf("c", []byte("corr"), []byte("SET k v"), &other),
		r.keyOf("d", []byte("corr"), []byte("SET k v"), &env),
		r.keyOf("c", []byte("corr2"), []byte("SET k v"), &env),
	} {
		if _, seen := r.begin(k2); seen {
			t.Fatalf("%+v taken for %+v", k2, k)
		}
	}
	// A read is remembered without its response; busy is forgotten.
	g := r.keyOf("c", []byte("g"), []byte("GET k"), &env)
	r.begin(g)
	r.finish(g, wire.VerbGet, nil, []byte("$1\r\nv\r\n"), nil)
	if e, _ := r.begin(g); !e.done || e.kept {
		t.Fatalf("read: %+v", e)
	}
	b := r.keyOf("c", []byte("b"), []byte("SET k v"), &env)
	r.begin(b)
	r.finish(b, wire.VerbSet, wire.ErrBusy, nil, nil)
	if _, seen := r.begin(b); seen {
		t.Fatal("a request answered busy is remembered")
	}
	// Past the window, forgotten.
	clock.Add(2 * time.Minute)
	if _, seen := r.begin(k); seen {
		t.Fatal("remembered past the window")
	}
	if n := r.len(); n != 1 {
		t.Fatalf("%d requests remembered, want 1", n)
	}
}

func TestRecentBound(t *testing.T) {
	r := newRecent(time.Hour, time.Now)
	r.max = 10
	var env service.Envelope
	for i := 0; i < 100; i++ {
		r.begin(r.keyOf("c", []byte{byte(i)}, nil, &env))
	}
	if n := r.len(); n > 11 {
		t.Fatalf("%d requests remembered, bound 10", n)
	}
}

// fakeClock is a clock that tests move.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time      { return c.now }
func (c *fakeClock) Add(d time.Duration) { c.now = c.now.Add(d) }
