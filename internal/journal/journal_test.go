package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func open(t *testing.T, dir string) (*Journal, *store.Machine) {
	t.Helper()
	j, m, err := Open(Options{Dir: dir, Logger: quiet()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return j, m
}

func ver(wall int64) hlc.Timestamp { return hlc.Timestamp{Wall: wall, Node: "n"} }

// history applies n SETs and DELs to a machine and journals the changes.
func history(t testing.TB, j *Journal, m *store.Machine, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		c := &store.Command{Op: store.OpSet, Key: []byte(fmt.Sprintf("k%d", i%37)), Value: []byte(fmt.Sprintf("v%d", i)), Time: int64(i), Version: ver(int64(i))}
		if i%5 == 0 {
			c.Op = store.OpDel
		}
		if i%7 == 0 {
			c.Fence, c.HasFence = ver(int64(i)), true
		}
		if i%11 == 0 {
			c.ExpiresAt = int64(i) + 1_000_000
		}
		_, changes := m.Apply(c, nil)
		for k := range changes {
			if err := j.Append(&changes[k]); err != nil {
				t.Fatal(err)
			}
		}
		if i%10 == 0 {
			if err := j.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := j.Flush(); err != nil {
		t.Fatal(err)
	}
}

func same(t *testing.T, want, got *store.Machine) {
	t.Helper()
	if want.Len() != got.Len() || want.Seq() != got.Seq() || want.DataBytes() != got.DataBytes() {
		t.Fatalf("recovered %d keys (seq %d, %d bytes), want %d (seq %d, %d bytes)",
			got.Len(), got.Seq(), got.DataBytes(), want.Len(), want.Seq(), want.DataBytes())
	}
	for c := range want.Entries() {
		v, version, ok := got.Get([]byte(c.Key), 0)
		if !ok || !bytes.Equal(v, c.Value) || version != c.Version {
			t.Fatalf("key %q recovered as %q %v %v, want %q %v", c.Key, v, version, ok, c.Value, c.Version)
		}
		// Versions that clients saw must not be issued again.
		if got.MaxVersion().Before(c.Version) {
			t.Fatalf("recovered max version %v below the version %v of %q", got.MaxVersion(), c.Version, c.Key)
		}
	}
}

func TestReopenReplaysTheLog(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	if m.Len() != 0 {
		t.Fatal("a new journal holds keys")
	}
	history(t, j, m, 1, 500)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, m2 := open(t, dir)
	same(t, m, m2)
	// And it keeps appending where it left off.
	history(t, j2, m2, 501, 100)
	j2.Close()
	j3, m3 := open(t, dir)
	defer j3.Close()
	same(t, m2, m3)
}

func TestTheDirectoryIsLocked(t *testing.T) {
	dir := t.TempDir()
	j, _ := open(t, dir)
	defer j.Close()
	if _, _, err := Open(Options{Dir: dir, Logger: quiet()}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
}

func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	files, err := listDir(dir)
	if err != nil || len(files.segments) == 0 {
		t.Fatalf("no segment in %s: %v", dir, err)
	}
	return filepath.Join(dir, segmentName(files.segments[len(files.segments)-1]))
}

func appendToFile(t *testing.T, name string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func TestTornTailIsDiscarded(t *testing.T) {
	for name, tail := range map[string]func(whole []byte) []byte{
		"cut short":   func(whole []byte) []byte { return whole[:len(whole)-3] },
		"header only": func(whole []byte) []byte { return whole[:5] },
		"zeros":       func(whole []byte) []byte { return make([]byte, 4096) },
		"end zeroed":  func(whole []byte) []byte { b := bytes.Clone(whole); clear(b[len(b)-6:]); return b },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			j, m := open(t, dir)
			history(t, j, m, 1, 50)
			j.Close()
			// A record that never completed.
			c := store.Change{Seq: m.Seq() + 1, Key: "torn", Version: ver(9999), Value: []byte("lost")}
			rec, start := beginRecord(nil)
			rec = endRecord(appendChange(rec, &c), start)
			seg := lastSegment(t, dir)
			before, _ := os.Stat(seg)
			appendToFile(t, seg, tail(rec))

			j2, m2 := open(t, dir)
			same(t, m, m2)
			if after, _ := os.Stat(seg); after.Size() != before.Size() {
				t.Fatalf("the torn tail was not cut off: %d bytes, was %d", after.Size(), before.Size())
			}
			if got := asideFiles(t, dir, "torn-"); len(got) != 1 || !bytes.Equal(got[0], tail(rec)) {
				t.Fatalf("the cut bytes were not kept aside: %q", got)
			}
			history(t, j2, m2, 51, 20)
			j2.Close()
			j3, m3 := open(t, dir)
			defer j3.Close()
			same(t, m2, m3)
		})
	}
}

func TestDamageBeforeTheEndStopsOpen(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 100)
	j.Close()
	seg := lastSegment(t, dir)
	data, _ := os.ReadFile(seg)
	at := len(data) / 2
	data[at] ^= 0x55
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Open(Options{Dir: dir, Logger: quiet()})
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("Open of a damaged journal: %v, want a CorruptError", err)
	}
	if ce.File != seg || ce.Offset <= 0 || ce.Offset > int64(at) {
		t.Fatalf("error names %s at %d; damage is in %s at %d", ce.File, ce.Offset, seg, at)
	}
	if !strings.Contains(err.Error(), seg) || !strings.Contains(err.Error(), "dss recover") {
		t.Fatalf("error text does not say where and what to do: %v", err)
	}
	// dss recover keeps the records after the damage too: the text must
	// not suggest that only what precedes it can be had again.
	if !strings.Contains(err.Error(), "before and after the damage") {
		t.Fatalf("error text does not say that dss recover keeps the records after the damage: %v", err)
	}
}

// snapshot writes a snapshot of m the way the engine does, with all keys
// in one step.
func snapshot(t testing.TB, j *Journal, m *store.Machine) {
	t.Helper()
	w, all := beginSnapshot(t, j, m)
	if err := w.Write(all); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(m.MaxVersion()); err != nil {
		t.Fatal(err)
	}
}

// beginSnapshot starts a snapshot of m and returns every key to write.
func beginSnapshot(t testing.TB, j *Journal, m *store.Machine) (*SnapshotWriter, []store.Change) {
	t.Helper()
	w, err := j.BeginSnapshot(m.Seq(), m.MaxVersion())
	if err != nil {
		t.Fatal(err)
	}
	return w, slices.Collect(m.Entries())
}

func TestSnapshotCompactsTheLog(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 300)
	snapshot(t, j, m)
	files, _ := listDir(dir)
	if len(files.snapshots) != 1 || len(files.segments) != 1 || files.segments[0] != m.Seq()+1 {
		t.Fatalf("after a snapshot: %+v", files)
	}
	history(t, j, m, 301, 200)
	snapshot(t, j, m)
	history(t, j, m, 501, 50)
	j.Close()
	files, _ = listDir(dir)
	if len(files.snapshots) != 1 || len(files.segments) != 1 {
		t.Fatalf("after a second snapshot: %+v", files)
	}
	j2, m2 := open(t, dir)
	defer j2.Close()
	same(t, m, m2)
}

func TestInterruptedSnapshotIsIgnored(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 100)
	w, all := beginSnapshot(t, j, m)
	if err := w.Write(all[:len(all)/2]); err != nil {
		t.Fatal(err)
	}
	w.w.Flush() // half a snapshot on disk, then the crash
	history(t, j, m, 101, 30)
	j.Close()
	j2, m2 := open(t, dir)
	defer j2.Close()
	same(t, m, m2)
	files, _ := listDir(dir)
	if len(files.temps) != 0 {
		t.Fatalf("leftover %v", files.temps)
	}
}

func TestDamagedSnapshotStopsOpen(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	history(t, j, m, 1, 100)
	snapshot(t, j, m)
	j.Close()
	files, _ := listDir(dir)
	name := filepath.Join(dir, snapshotName(files.snapshots[0]))
	data, _ := os.ReadFile(name)
	data[len(data)/3] ^= 0x01
	os.WriteFile(name, data, 0o644)
	_, _, err := Open(Options{Dir: dir, Logger: quiet()})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.File != name {
		t.Fatalf("Open with a damaged snapshot: %v", err)
	}
}

func TestVolatileChangesKeepOnlyTheirVersion(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	apply := func(c *store.Command) {
		_, changes := m.Apply(c, nil)
		for i := range changes {
			j.Append(&changes[i])
		}
	}
	apply(&store.Command{Op: store.OpSet, Key: []byte("durable"), Value: []byte("a"), Version: ver(1)})
	apply(&store.Command{Op: store.OpSet, Key: []byte("replaced"), Value: []byte("b"), Version: ver(2)})
	apply(&store.Command{Op: store.OpSet, Key: []byte("volatile"), Value: []byte("c"), Version: ver(3), Volatile: true})
	// A volatile value replaces a durable one: the durable one must not
	// come back after a restart.
	apply(&store.Command{Op: store.OpSet, Key: []byte("replaced"), Value: []byte("d"), Version: ver(4), Volatile: true})
	j.Flush()
	j.Close()
	j2, m2 := open(t, dir)
	defer j2.Close()
	if _, _, ok := m2.Get([]byte("durable"), 0); !ok {
		t.Fatal("durable key lost")
	}
	for _, k := range []string{"volatile", "replaced"} {
		if v, _, ok := m2.Get([]byte(k), 0); ok {
			t.Fatalf("%s survived as %q", k, v)
		}
	}
	if m2.MaxVersion() != ver(4) {
		t.Fatalf("max version %v: the versions of volatile changes must survive", m2.MaxVersion())
	}
}

func TestParseFsync(t *testing.T) {
	for _, s := range []string{"always", "everysec", "no"} {
		f, err := ParseFsync(s)
		if err != nil || f.String() != s {
			t.Errorf("ParseFsync(%q) = %v, %v", s, f, err)
		}
	}
	if _, err := ParseFsync("sometimes"); err == nil {
		t.Error("ParseFsync accepted an unknown policy")
	}
}

// FuzzSegment opens a data directory whose segment holds arbitrary bytes
// after a valid header: Open must either recover or report damage, never
// crash, and what it recovers must reopen the same.
func FuzzSegment(f *testing.F) {
	var seed []byte
	for i := 1; i < 5; i++ {
		c := store.Change{Seq: uint64(i), Key: fmt.Sprint("k", i), Version: ver(int64(i)), Value: []byte("v"), Fenced: i%2 == 0, Fence: ver(1)}
		rec, start := beginRecord(nil)
		seed = append(seed, endRecord(appendChange(rec, &c), start)...)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-2])
	f.Add([]byte{})
	f.Add(make([]byte, 16))
	f.Fuzz(func(t *testing.T, body []byte) {
		dir := t.TempDir()
		seg := filepath.Join(dir, segmentName(1))
		hdr := appendRecord(nil, appendHeader(nil, header{kind: recSegmentHeader, seq: 1}))
		if err := os.WriteFile(seg, append(hdr, body...), 0o644); err != nil {
			t.Fatal(err)
		}
		j, m, err := Open(Options{Dir: dir, Logger: quiet()})
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %v", err)
			}
			return
		}
		j.Close()
		j2, m2 := open(t, dir)
		defer j2.Close()
		if m.Len() != m2.Len() || m.Seq() != m2.Seq() {
			t.Fatalf("reopened as %d keys (seq %d), first %d (seq %d)", m2.Len(), m2.Seq(), m.Len(), m.Seq())
		}
	})
}

// TestConcurrentAppendAndFlush appends from one goroutine while another
// flushes, often with nothing pending: no record may be damaged or lost.
func TestConcurrentAppendAndFlush(t *testing.T) {
	dir := t.TempDir()
	j, m := open(t, dir)
	var mu sync.Mutex // the engine lock
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= 20000; i++ {
			mu.Lock()
			c := &store.Command{Op: store.OpSet, Key: []byte(fmt.Sprint("k", i%100)), Value: bytes.Repeat([]byte{byte(i)}, i%300), Version: ver(int64(i))}
			_, changes := m.Apply(c, nil)
			for k := range changes {
				j.Append(&changes[k])
			}
			mu.Unlock()
		}
	}()
	for flushing := true; flushing; {
		select {
		case <-done:
			flushing = false
		default:
		}
		if err := j.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	j2, m2 := open(t, dir)
	defer j2.Close()
	same(t, m, m2)
}

// TestFlushBuffersNeverShareMemory: appends go into one buffer while
// Flush writes the other; an empty Flush once left both the same.
func TestFlushBuffersNeverShareMemory(t *testing.T) {
	j, m := open(t, t.TempDir())
	defer j.Close()
	step := func(i int) {
		_, changes := m.Apply(&store.Command{Op: store.OpSet, Key: []byte("k"), Value: []byte("v"), Version: ver(int64(i))}, nil)
		j.Append(&changes[0])
	}
	for i := 1; i < 10; i++ {
		step(i)
		j.Flush()
		j.Flush() // nothing pending
		step(100 + i)
		if cap(j.spare) > 0 && cap(j.pending) > 0 && &j.spare[:1][0] == &j.pending[:1][0] {
			t.Fatalf("round %d: the pending and spare buffers share memory", i)
		}
		j.Flush()
	}
}

func TestSnapshotIsDueWhenTheDataShrinks(t *testing.T) {
	dir := t.TempDir()
	j, m, err := Open(Options{Dir: dir, Logger: quiet(), SnapshotAfter: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	set := func(i int, value []byte) {
		_, changes := m.Apply(&store.Command{Op: store.OpSet, Key: []byte(fmt.Sprint("key-", i)), Value: value, Version: ver(int64(i))}, nil)
		j.Append(&changes[0])
	}
	for i := 0; i < 1000; i++ {
		set(i, make([]byte, 100))
	}
	j.Flush()
	if !j.SnapshotDue(m.Len(), m.DataBytes()) {
		t.Fatal("no snapshot due after the journal grew past SnapshotAfter")
	}
	snapshot(t, j, m)
	if j.SnapshotDue(m.Len(), m.DataBytes()) {
		t.Fatal("a snapshot is due right after one")
	}
	// Rewriting a few keys neither grows the journal enough nor shrinks
	// the data.
	for i := 0; i < 10; i++ {
		set(i, make([]byte, 100))
	}
	if j.SnapshotDue(m.Len(), m.DataBytes()) {
		t.Fatal("a snapshot is due though nothing shrank or grew much")
	}
	for i := 0; i < 600; i++ {
		_, changes := m.Apply(&store.Command{Op: store.OpDel, Key: []byte(fmt.Sprint("key-", i)), Version: ver(int64(2000 + i))}, nil)
		j.Append(&changes[0])
	}
	j.Flush()
	if !j.SnapshotDue(m.Len(), m.DataBytes()) {
		t.Fatalf("no snapshot due after 600 of 1000 keys were deleted (journal %d bytes since the snapshot)", j.sinceSnapshot)
	}
	before := j.lastSnapshot.size
	snapshot(t, j, m)
	if after := j.lastSnapshot.size; after*2 > before {
		t.Fatalf("the new snapshot has %d bytes, the old one %d", after, before)
	}
	if j.SnapshotDue(m.Len(), m.DataBytes()) {
		t.Fatal("a snapshot is due right after the data shrank and one was written")
	}
	// The figures survive a restart.
	j.Close()
	j2, m2 := open(t, dir)
	defer j2.Close()
	if j2.lastSnapshot.keys != int64(m2.Len()) || j2.lastSnapshot.data != m2.DataBytes() {
		t.Fatalf("reopened with snapshot figures %+v for %d keys, %d bytes", j2.lastSnapshot, m2.Len(), m2.DataBytes())
	}
}
