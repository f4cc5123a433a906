package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// memJournal is an in-memory Journal that can be told to fail.
type memJournal struct {
	mu       sync.Mutex
	pending  []store.Change
	durable  []store.Change
	flushes  int
	failNext error
	due      bool
	snaps    []memSnapshot
}

type memSnapshot struct {
	seq     uint64
	entries []store.Change
	done    bool
}

var _ Journal = (*memJournal)(nil)

func (j *memJournal) Append(c *store.Change) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending = append(j.pending, *c)
	return nil
}

func (j *memJournal) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failNext != nil {
		return j.failNext
	}
	j.flushes++
	j.durable = append(j.durable, j.pending...)
	j.pending = nil
	return nil
}

func (j *memJournal) SnapshotDue(int, int64) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.due
}

func (j *memJournal) BeginSnapshot(seq uint64, _ hlc.Timestamp) (SnapshotWriter, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.due = false
	j.snaps = append(j.snaps, memSnapshot{seq: seq})
	return &memSnapshotWriter{j: j, i: len(j.snaps) - 1}, nil
}

type memSnapshotWriter struct {
	j *memJournal
	i int
}

func (w *memSnapshotWriter) Write(entries []store.Change) error {
	w.j.mu.Lock()
	defer w.j.mu.Unlock()
	w.j.snaps[w.i].entries = append(w.j.snaps[w.i].entries, entries...)
	return nil
}

func (w *memSnapshotWriter) Finish(hlc.Timestamp) error {
	w.j.mu.Lock()
	defer w.j.mu.Unlock()
	w.j.snaps[w.i].done = true
	return nil
}

func (w *memSnapshotWriter) Abort() {}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = hlc.NewClock("n", nil)
	}
	cfg.Logger = quiet()
	n := New(cfg)
	n.Start()
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// do submits a request and waits for its result.
func do(n *Node, r wire.Request, ts bool) Result {
	done := make(chan struct{})
	op := &Op{Request: r, Done: func(*Op) { close(done) }}
	if ts {
		op.Timestamp, op.HasTimestamp = hlc.Timestamp{Wall: time.Now().UnixMilli(), Node: "c"}, true
	}
	n.Submit(context.Background(), op)
	<-done
	return op.Result
}

func set(key, value string) wire.Request {
	return wire.Request{Verb: wire.VerbSet, Key: []byte(key), Value: []byte(value)}
}

func TestResultsAreDeliveredInApplyOrder(t *testing.T) {
	n := newNode(t, Config{Journal: &memJournal{}})
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		i := i
		n.Submit(context.Background(), &Op{Request: set(fmt.Sprint("k", i%10), "v"), Done: func(*Op) {
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			wg.Done()
		}})
	}
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("result %d delivered as number %d", got, i)
		}
	}
}

func TestResponsesWaitForTheJournal(t *testing.T) {
	j := &memJournal{}
	n := newNode(t, Config{Journal: j})
	for i := 0; i < 100; i++ {
		r := do(n, set(fmt.Sprint("k", i), "v"), true)
		if r.Outcome != store.Applied {
			t.Fatalf("SET: %+v", r)
		}
		j.mu.Lock()
		durable := len(j.durable)
		j.mu.Unlock()
		if durable != i+1 {
			t.Fatalf("SET %d answered with %d changes durable", i, durable)
		}
	}
	// A GET right after a SET is answered once the SET is durable, too.
	if r := do(n, wire.Request{Verb: wire.VerbGet, Key: []byte("k1")}, false); !r.Found {
		t.Fatalf("GET: %+v", r)
	}
}

func TestGroupCommit(t *testing.T) {
	j := &memJournal{}
	n := newNode(t, Config{Journal: j})
	const requests = 2000
	var wg sync.WaitGroup
	wg.Add(requests)
	for i := 0; i < requests; i++ {
		n.Submit(context.Background(), &Op{Request: set(fmt.Sprint("k", i), "v"), Done: func(*Op) { wg.Done() }})
	}
	wg.Wait()
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.durable) != requests {
		t.Fatalf("%d changes durable, want %d", len(j.durable), requests)
	}
	t.Logf("%d requests, %d flushes", requests, j.flushes)
	if j.flushes >= requests {
		t.Fatalf("%d flushes for %d requests submitted at once: no group commit", j.flushes, requests)
	}
}

func TestJournalFailureStopsWrites(t *testing.T) {
	j := &memJournal{}
	n := newNode(t, Config{Journal: j})
	do(n, set("a", "1"), true)
	j.mu.Lock()
	j.failNext = errors.New("disk on fire")
	j.mu.Unlock()
	if r := do(n, set("b", "2"), true); r.Err != wire.ErrUnavailable {
		t.Fatalf("SET when the journal fails: %+v", r)
	}
	// From now on, the node refuses everything: what it holds in memory
	// is ahead of what is durable.
	if r := do(n, wire.Request{Verb: wire.VerbGet, Key: []byte("a")}, false); r.Err != wire.ErrUnavailable {
		t.Fatalf("GET after the failure: %+v", r)
	}
	if err := n.Close(); err == nil {
		t.Fatal("Close does not report the journal failure")
	}
}

func TestCloseAnswersEverythingApplied(t *testing.T) {
	n := newNode(t, Config{Journal: &memJournal{}})
	var answered sync.WaitGroup
	for i := 0; i < 500; i++ {
		answered.Add(1)
		n.Submit(context.Background(), &Op{Request: set(fmt.Sprint("k", i), "v"), Done: func(op *Op) {
			if op.Result.Err != nil {
				t.Errorf("request answered with %v", op.Result.Err)
			}
			answered.Done()
		}})
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	answered.Wait()
	if r := do(n, set("late", "v"), true); r.Err != wire.ErrUnavailable {
		t.Fatalf("request after Close: %+v", r)
	}
}

func TestClockSkew(t *testing.T) {
	n := newNode(t, Config{MaxSkew: time.Second})
	op := &Op{Request: set("k", "v"), Timestamp: hlc.Timestamp{Wall: time.Now().Add(5 * time.Second).UnixMilli()}, HasTimestamp: true}
	done := make(chan struct{})
	op.Done = func(*Op) { close(done) }
	n.Submit(context.Background(), op)
	<-done
	if op.Result.Err != wire.ErrTimestampSkew {
		t.Fatalf("__ts 5s ahead with a 1s limit: %+v", op.Result)
	}
}

func TestSnapshotWhileWriting(t *testing.T) {
	j := &memJournal{}
	n := newNode(t, Config{Journal: j})
	for i := 0; i < 3000; i++ {
		do(n, set(fmt.Sprint("k", i), "v"), true)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			do(n, set(fmt.Sprint("k", i%5000), fmt.Sprint("w", i)), true)
		}
	}()
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	n.Close()

	// The snapshot plus the changes after its seq rebuild the machine.
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.snaps) != 1 || !j.snaps[0].done || len(j.snaps[0].entries) < 3000 {
		t.Fatalf("snapshot: %d taken, %d keys", len(j.snaps), len(j.snaps[0].entries))
	}
	rebuilt := store.New()
	for i := range j.snaps[0].entries {
		rebuilt.Replay(&j.snaps[0].entries[i])
	}
	for i := range j.durable {
		if j.durable[i].Seq > j.snaps[0].seq {
			rebuilt.Replay(&j.durable[i])
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if rebuilt.Len() != n.m.Len() || rebuilt.Seq() != n.m.Seq() || rebuilt.DataBytes() != n.m.DataBytes() {
		t.Fatalf("rebuilt %d keys seq %d, live %d keys seq %d", rebuilt.Len(), rebuilt.Seq(), n.m.Len(), n.m.Seq())
	}
	for c := range n.m.Entries() {
		v, ver, ok := rebuilt.Get([]byte(c.Key), 0)
		if !ok || string(v) != string(c.Value) || ver != c.Version {
			t.Fatalf("%s rebuilt as %q %v, live %q %v", c.Key, v, ver, c.Value, c.Version)
		}
	}
}

func TestSnapshotLoopRunsWhenDue(t *testing.T) {
	j := &memJournal{}
	n := newNode(t, Config{Journal: j, SnapshotCheck: 5 * time.Millisecond})
	do(n, set("k", "v"), true)
	j.mu.Lock()
	j.due = true
	j.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		j.mu.Lock()
		taken := len(j.snaps) == 1 && j.snaps[0].done
		j.mu.Unlock()
		if taken {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no snapshot although one was due")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watchAll is a Notifier that records every change it is told of.
type watchAll struct {
	mu      sync.Mutex
	changes []store.Change
	keys    []string // the keys Watched reports
}

func (w *watchAll) KeyNotify(op *Op) {}

func (w *watchAll) Watched() []string { return w.keys }

func (w *watchAll) WatchesPatterns() bool { return false }

func (w *watchAll) Changed(c *store.Change) func() {
	change := *c
	return func() {
		w.mu.Lock()
		w.changes = append(w.changes, change)
		w.mu.Unlock()
	}
}

func TestExpiryIsAnnouncedWithItsOwnVersion(t *testing.T) {
	w := &watchAll{}
	n := newNode(t, Config{Notifier: w})
	r := do(n, wire.Request{Verb: wire.VerbSet, Key: []byte("k"), Value: []byte("v"), PX: 30}, true)
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		got := append([]store.Change(nil), w.changes...)
		w.mu.Unlock()
		if len(got) == 2 {
			if !got[1].Deleted || !r.Version.Before(got[1].Version) {
				t.Fatalf("expiry change %+v after SET version %v", got[1], r.Version)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("changes: %+v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stallJournal is a journal whose Flush waits until released.
type stallJournal struct {
	memJournal
	release chan struct{}
}

func (j *stallJournal) Flush() error {
	<-j.release
	return j.memJournal.Flush()
}

// TestSubmitAnswersBusyWhenDeliveryFallsBehind: with the disk stalled, a
// client that keeps sending is told "busy" at the bound, at once, instead
// of filling the memory or holding the goroutine that submits.
func TestSubmitAnswersBusyWhenDeliveryFallsBehind(t *testing.T) {
	j := &stallJournal{release: make(chan struct{})}
	n := newNode(t, Config{Journal: j, MaxUndelivered: 100})
	var mu sync.Mutex
	var busy, ok int
	var answered sync.WaitGroup
	answered.Add(300)
	for i := 0; i < 300; i++ {
		n.Submit(context.Background(), &Op{Request: set(fmt.Sprint("k", i), "v"), Done: func(op *Op) {
			mu.Lock()
			switch op.Result.Err {
			case wire.ErrBusy:
				if !op.Inline {
					t.Errorf("busy answered later, not inside Submit")
				}
				busy++
			case nil:
				ok++
			default:
				t.Errorf("request answered %v", op.Result.Err)
			}
			mu.Unlock()
			answered.Done()
		}})
	}
	// Every request beyond the bound was answered inside Submit.
	mu.Lock()
	if busy != 200 || ok != 0 {
		t.Fatalf("with the journal stalled: %d busy, %d done; want 200 busy, 0 done", busy, ok)
	}
	mu.Unlock()
	close(j.release)
	answered.Wait()
	if ok != 100 {
		t.Fatalf("%d requests carried out after the journal came back, want 100", ok)
	}
	// Once the pipeline drained, requests are taken again. The delivery
	// goroutine counts a batch as delivered after its last answer, so
	// the first request after the answers may still find the bound
	// reached: it is answered busy at most until then.
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := do(n, set("after", "v"), true)
		if r.Err == nil {
			break
		}
		if r.Err != wire.ErrBusy || time.Now().After(deadline) {
			t.Fatalf("SET after the stall: %+v", r)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSubmitWithDoneContextIsUnavailable(t *testing.T) {
	n := newNode(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	op := &Op{Request: set("k", "v"), Done: func(*Op) {}}
	if !n.Submit(ctx, op) || op.Result.Err != wire.ErrUnavailable {
		t.Fatalf("Submit with a done context: %+v", op.Result)
	}
}
