package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// recordingBackup keeps what Backup writes, in order.
type recordingBackup struct {
	begin, end uint64
	maxVersion hlc.Timestamp
	records    []store.Change
	keysCalls  int
	slow       time.Duration // how long each Keys takes: a slow destination, so that writes come between the steps
	block      chan struct{} // Keys waits for it once, when set
	blocked    chan struct{} // closed when Keys starts waiting for block, when set
}

func (b *recordingBackup) Begin(seq uint64, _ hlc.Timestamp) error { b.begin = seq; return nil }
func (b *recordingBackup) Keys(entries []store.Change) error {
	if b.block != nil {
		if b.blocked != nil {
			close(b.blocked)
		}
		<-b.block
		b.block = nil
	}
	b.keysCalls++
	b.records = append(b.records, entries...)
	time.Sleep(b.slow)
	return nil
}
func (b *recordingBackup) Changes(changes []store.Change) error {
	b.records = append(b.records, changes...)
	return nil
}
func (b *recordingBackup) Finish(seq uint64, v hlc.Timestamp) error {
	b.end, b.maxVersion = seq, v
	return nil
}

// writeLoad sends SETs and DELs of n keys until stop is closed.
func writeLoad(n *Node, keys int, stop chan struct{}, seed uint64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprint("k", r.IntN(keys+keys/2))
				if r.IntN(4) == 0 {
					do(n, wire.Request{Verb: wire.VerbDel, Key: []byte(k)}, false)
				} else {
					do(n, set(k, fmt.Sprint("v", w, "-", i)), false)
				}
			}
		}()
	}
	return &wg
}

// TestBackupIsConsistentUnderWrites copies the machine while four clients
// write: replaying the copy gives exactly the state after the change the
// copy says it ends with.
func TestBackupIsConsistentUnderWrites(t *testing.T) {
	j := &memJournal{}
	n := newNode(t, Config{Journal: j})
	const keys = 5000
	for i := 0; i < keys; i++ {
		do(n, set(fmt.Sprint("k", i), "initial"), false)
	}
	stop := make(chan struct{})
	wg := writeLoad(n, keys, stop, rand.Uint64())
	b := &recordingBackup{slow: 200 * time.Microsecond}
	err := n.Backup(context.Background(), b)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if b.keysCalls < 5 || b.end <= b.begin {
		t.Fatalf("the backup took %d steps from change %d to %d: the writes did not run meanwhile", b.keysCalls, b.begin, b.end)
	}
	got := store.New()
	for i := range b.records {
		got.Replay(&b.records[i])
	}
	got.Replay(&store.Change{Seq: b.end, Version: b.maxVersion})
	want := store.New()
	j.mu.Lock()
	all := append(j.durable, j.pending...)
	j.mu.Unlock()
	for i := range all {
		if all[i].Seq <= b.end {
			want.Replay(&all[i])
		}
	}
	if got.Len() != want.Len() || got.Seq() != want.Seq() || got.DataBytes() != want.DataBytes() {
		t.Fatalf("the backup holds %d keys up to change %d, %d bytes; the state at change %d had %d keys, %d bytes",
			got.Len(), got.Seq(), got.DataBytes(), b.end, want.Len(), want.DataBytes())
	}
	for c := range want.Entries() {
		v, version, ok := got.Get([]byte(c.Key), 0)
		if !ok || !bytes.Equal(v, c.Value) || version != c.Version {
			t.Fatalf("key %q in the backup: %q %v %v, want %q %v", c.Key, v, version, ok, c.Value, c.Version)
		}
	}
	if got.MaxVersion().Before(want.MaxVersion()) {
		t.Fatalf("the backup's max version %v is below %v", got.MaxVersion(), want.MaxVersion())
	}
}

func TestBackupThatFallsBehindFails(t *testing.T) {
	defer func(v int64) { maxBackupLag = v }(maxBackupLag)
	maxBackupLag = 64 << 10
	n := newNode(t, Config{})
	for i := 0; i < 2000; i++ {
		do(n, set(fmt.Sprint("k", i), "initial"), false)
	}
	b := &recordingBackup{block: make(chan struct{}), blocked: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- n.Backup(context.Background(), b) }()
	// The changes come while the backup is under way, not before it
	// begins (a loaded machine may start its goroutine late).
	<-b.blocked
	for i := 0; i < 1000; i++ {
		do(n, set(fmt.Sprint("k", i), string(make([]byte, 200))), false)
	}
	close(b.block)
	if err := <-done; !errors.Is(err, ErrBackupLag) {
		t.Fatalf("Backup that fell 200 KB behind: %v, want ErrBackupLag", err)
	}
	// The node goes on, and a later backup works.
	if err := n.Backup(context.Background(), &recordingBackup{}); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.backups) != 0 {
		t.Fatalf("%d backups still collect changes", len(n.backups))
	}
}

func TestBackupEndsWithItsContext(t *testing.T) {
	n := newNode(t, Config{})
	for i := 0; i < 2000; i++ {
		do(n, set(fmt.Sprint("k", i), "v"), false)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &recordingBackup{block: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- n.Backup(ctx, b) }()
	cancel()
	close(b.block)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Backup after its context ended: %v", err)
	}
}
