package client

import (
	"errors"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func TestWatchReportsChanges(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	writer := dial(t, s.Addr())
	w, err := c.Watch(ctxT(t), []string{"a", "b\x00\r\n"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctxT(t))

	v1 := mustSet(t, writer, "a", "1").Version
	e := nextEvent(t, w)
	expectEvent(t, e, "a", OpSet, "1", false)
	if e.Version != v1 {
		t.Fatalf("event version %v, want %v", e.Version, v1)
	}
	mustSet(t, writer, "b\x00\r\n", "\x00bin\r\n")
	expectEvent(t, nextEvent(t, w), "b\x00\r\n", OpSet, "\x00bin\r\n", false)
	mustSet(t, writer, "unwatched", "x")
	d, err := writer.Del(ctxT(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	e = nextEvent(t, w)
	expectEvent(t, e, "a", OpDelete, "", false)
	if !e.Version.After(v1) {
		t.Fatalf("delete version %v not after %v (del reported %v)", e.Version, v1, d.Version)
	}
	mustSet(t, writer, "a", "ttl", TTL(20*time.Millisecond))
	expectEvent(t, nextEvent(t, w), "a", OpSet, "ttl", false)
	expectEvent(t, nextEvent(t, w), "a", OpDelete, "", false) // expiry
}

func TestWatchInitialState(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	v := mustSet(t, c, "present", "here").Version
	w, err := c.Watch(ctxT(t), []string{"present", "absent", "present"}, InitialState)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctxT(t))
	if got := w.Keys(); len(got) != 2 {
		t.Fatalf("keys %q, want the two distinct keys", got)
	}
	e := nextEvent(t, w)
	expectEvent(t, e, "present", OpSet, "here", true)
	if e.Version != v {
		t.Fatalf("initial version %v, want %v", e.Version, v)
	}
	e = nextEvent(t, w)
	expectEvent(t, e, "absent", OpDelete, "", true)
	if !e.Version.IsZero() {
		t.Fatalf("a missing key has no version, got %v", e.Version)
	}
	mustSet(t, c, "absent", "now")
	expectEvent(t, nextEvent(t, w), "absent", OpSet, "now", false)
}

func TestWatchStop(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	w1, err := c.Watch(ctxT(t), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := c.Watch(ctxT(t), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, c, "k", "1")
	expectEvent(t, nextEvent(t, w1), "k", OpSet, "1", false)
	expectEvent(t, nextEvent(t, w2), "k", OpSet, "1", false)

	if err := w1.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-w1.Events(); ok {
		t.Fatal("Events open after Stop")
	}
	if w1.Err() != nil {
		t.Fatalf("Err after Stop: %v", w1.Err())
	}
	if err := w1.Stop(ctxT(t)); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	// The other watch of the key still gets its changes: the server
	// registration stays while a watch wants it.
	mustSet(t, c, "k", "2")
	expectEvent(t, nextEvent(t, w2), "k", OpSet, "2", false)

	if err := w2.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// The registration is gone: a STOP now finds none.
	res, err := c.call(ctxT(t), &request{payload: []byte("*3\r\n$9\r\nKEYNOTIFY\r\n$1\r\nk\r\n$4\r\nSTOP\r\n")})
	if err != nil || res.reply.Int != 0 {
		t.Fatalf("KEYNOTIFY STOP after the last Stop: %+v %v; want :0", res.reply, err)
	}
}

func TestWatchEndsWithClient(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	w, err := c.Watch(ctxT(t), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if _, ok := <-w.Events(); ok {
		t.Fatal("event after Close")
	}
	if !errors.Is(w.Err(), ErrClosed) {
		t.Fatalf("Err %v, want ErrClosed", w.Err())
	}
	if err := w.Stop(ctxT(t)); err != nil {
		t.Fatalf("Stop after Close: %v", err)
	}
}

func TestWatchOverflow(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	w, err := c.Watch(ctxT(t), []string{"k"}, MaxPending(2))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctxT(t))
	// Nobody reads: the pump holds one event, the queue two, the next
	// overflows.
	for i := 0; i < 10; i++ {
		mustSet(t, c, "k", "v")
	}
	select {
	case <-w.Done():
	case <-time.After(dsstest.Timeout):
		t.Fatal("watch did not end")
	}
	if !errors.Is(w.Err(), ErrWatchOverflow) {
		t.Fatalf("Err %v, want ErrWatchOverflow", w.Err())
	}
}

func TestWatchNeedsKeys(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	if _, err := c.Watch(ctxT(t), nil); err == nil {
		t.Fatal("Watch without keys")
	}
	if _, err := c.Watch(ctxT(t), []string{""}); !errors.Is(err, ErrKeyLengthZero) {
		t.Fatalf("Watch of the empty key: %v", err)
	}
	c.mu.Lock()
	n := len(c.watches)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d keys left registered after failed watches", n)
	}
}

// TestKeySyncMerge checks how a resync merges with notifications that
// arrive around it.
func TestKeySyncMerge(t *testing.T) {
	w := &Watch{max: 100, wake: make(chan struct{}, 1), done: make(chan struct{}), keyed: map[string]*keySync{"k": {}}}
	v := func(n int64) Event {
		return Event{Key: "k", Op: OpSet, Value: []byte{byte('0' + n)}}.withVersion(n)
	}
	w.notify(v(1))
	seq := w.beginSync("k")
	w.notify(v(2)) // before the state was read: a repeat of it
	w.notify(v(4)) // after: news
	state := v(3)
	state.Resync = true
	w.endSync(seq, state)
	w.notify(v(3)) // late repeat
	w.notify(v(5))
	var got []int64
	for _, e := range w.queue {
		got = append(got, e.Version.Wall)
	}
	want := []int64{1, 3, 4, 5}
	if len(got) != len(want) {
		t.Fatalf("delivered versions %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delivered versions %v, want %v", got, want)
		}
	}

	// An older resync that finishes after a newer one reports nothing.
	w.queue = nil
	old, newer := w.beginSync("k"), w.beginSync("k")
	w.endSync(newer, v(7))
	w.endSync(old, v(6))
	if len(w.queue) != 1 || w.queue[0].Version.Wall != 7 {
		t.Fatalf("queue %+v, want only the newer state", w.queue)
	}
	// A missing key resets the baseline: a restarted server's lower
	// versions are news.
	w.queue = nil
	seq = w.beginSync("k")
	w.endSync(seq, Event{Key: "k", Op: OpDelete, Resync: true})
	w.notify(v(2))
	if len(w.queue) != 2 || w.queue[1].Version.Wall != 2 {
		t.Fatalf("queue %+v, want the state and the lower version", w.queue)
	}
}
