package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/internal/journal"
)

func entry(i, term uint64) *raft.Log {
	return &raft.Log{
		Index: i, Term: term, Type: raft.LogCommand,
		Data:       bytes.Repeat([]byte(fmt.Sprint(i%10)), int(100+i%300)),
		Extensions: []byte(fmt.Sprint("ext", i)),
		AppendedAt: time.Unix(0, int64(i)*1000),
	}
}

func open(t *testing.T, dir string, policy journal.Fsync, segSize int64) *Log {
	t.Helper()
	l, err := Open(Options{Dir: dir, Fsync: policy, SegmentSize: segSize})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func store(t *testing.T, l *Log, from, to, term uint64) {
	t.Helper()
	for i := from; i <= to; i += 7 {
		var batch []*raft.Log
		for j := i; j < i+7 && j <= to; j++ {
			batch = append(batch, entry(j, term))
		}
		if err := l.StoreLogs(batch); err != nil {
			t.Fatal(err)
		}
	}
}

// check asserts that the log holds exactly the entries first to last of
// the given term, each as entry() made it.
func check(t *testing.T, l *Log, first, last uint64, term func(uint64) uint64) {
	t.Helper()
	if f, _ := l.FirstIndex(); f != first {
		t.Fatalf("first index %d, want %d", f, first)
	}
	if la, _ := l.LastIndex(); la != last {
		t.Fatalf("last index %d, want %d", la, last)
	}
	for i := first; i <= last && first != 0; i++ {
		var got raft.Log
		if err := l.GetLog(i, &got); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		want := entry(i, term(i))
		if got.Index != i || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) ||
			!bytes.Equal(got.Extensions, want.Extensions) || !got.AppendedAt.Equal(want.AppendedAt) {
			t.Fatalf("entry %d read back as %+v", i, got)
		}
	}
	var none raft.Log
	if first > 1 {
		if err := l.GetLog(first-1, &none); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("entry before the first: %v", err)
		}
	}
	if err := l.GetLog(last+1, &none); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("entry after the last: %v", err)
	}
}

func term1(uint64) uint64 { return 1 }

// TestLogAppendsReadsAndReopens: entries stored in batches across many
// segments read back the same, before and after the log is reopened,
// under every policy.
func TestLogAppendsReadsAndReopens(t *testing.T) {
	for _, policy := range []journal.Fsync{journal.FsyncAlways, journal.FsyncEverySec, journal.FsyncNo} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, policy, 8<<10)
			check(t, l, 0, 0, term1)
			store(t, l, 1, 500, 1)
			check(t, l, 1, 500, term1)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if segs, _ := listSegments(dir); len(segs) < 5 {
				t.Fatalf("%d segments: the size bound did not start new ones", len(segs))
			}
			l = open(t, dir, policy, 8<<10)
			defer l.Close()
			check(t, l, 1, 500, term1)
			store(t, l, 501, 600, 1)
			check(t, l, 1, 600, term1)
		})
	}
}

// TestLogDeletesPrefixAndSuffix: compaction after a snapshot removes the
// segments it empties, a conflict cuts the end and new entries of
// another term follow it, and both hold after a reopen.
func TestLogDeletesPrefixAndSuffix(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, journal.FsyncAlways, 8<<10)
	store(t, l, 1, 400, 1)
	before, _ := listSegments(dir)
	if err := l.DeleteRange(1, 250); err != nil {
		t.Fatal(err)
	}
	check(t, l, 251, 400, term1)
	after, _ := listSegments(dir)
	if len(after) >= len(before) || after[0] > 251 {
		t.Fatalf("segments %v after compaction of %v", after, before)
	}
	// A conflict: entries from 300 on are replaced by term 2's.
	if err := l.DeleteRange(300, 400); err != nil {
		t.Fatal(err)
	}
	check(t, l, 251, 299, term1)
	store(t, l, 300, 420, 2)
	term := func(i uint64) uint64 {
		if i >= 300 {
			return 2
		}
		return 1
	}
	check(t, l, 251, 420, term)
	// A conflict at the first entry of a segment.
	segs, _ := listSegments(dir)
	at := segs[len(segs)-1]
	if err := l.DeleteRange(at, 420); err != nil {
		t.Fatal(err)
	}
	store(t, l, at, 430, 2)
	check(t, l, 251, 430, term)
	if err := l.DeleteRange(260, 270); err == nil {
		t.Fatal("a deletion from the middle of the log was taken")
	}
	l.Close()
	l = open(t, dir, journal.FsyncAlways, 8<<10)
	f, _ := l.FirstIndex()
	if f > 251 {
		t.Fatalf("first index %d after reopening: compacted entries that Raft keeps are gone", f)
	}
	check(t, l, f, 430, term)
	l.Close()
}

// TestLogEmptiedTakesEntriesAfterASnapshot: after a snapshot install Raft
// empties the log and appends after the snapshot's index, a gap the log
// takes only when it is empty.
func TestLogEmptiedTakesEntriesAfterASnapshot(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, journal.FsyncAlways, 8<<10)
	store(t, l, 1, 100, 1)
	if err := l.StoreLogs([]*raft.Log{entry(150, 1)}); err == nil {
		t.Fatal("an entry after a gap was taken")
	}
	if err := l.DeleteRange(1, 100); err != nil {
		t.Fatal(err)
	}
	check(t, l, 0, 0, term1)
	store(t, l, 5001, 5100, 3)
	three := func(uint64) uint64 { return 3 }
	check(t, l, 5001, 5100, three)
	l.Close()
	l = open(t, dir, journal.FsyncAlways, 8<<10)
	defer l.Close()
	check(t, l, 5001, 5100, three)
}

// lastSegment returns the name of the log's last segment file.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments %v: %v", segs, err)
	}
	return filepath.Join(dir, segmentName(segs[len(segs)-1]))
}

// TestLogCutsATornTail: the end of a write that a crash cut short is cut
// off the last segment when the log opens, a copy kept in torn-<time>;
// the entries before it are intact and the log appends after them.
func TestLogCutsATornTail(t *testing.T) {
	for name, tear := range map[string]func(b []byte) []byte{
		"cut short": func(b []byte) []byte { return b[:len(b)-37] },
		"zeros":     func(b []byte) []byte { return append(b, make([]byte, 4096)...) },
		"zeroed end": func(b []byte) []byte {
			clear(b[len(b)-50:])
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, journal.FsyncAlways, 1<<20)
			store(t, l, 1, 60, 1)
			l.Close()
			seg := lastSegment(t, dir)
			b, _ := os.ReadFile(seg)
			if err := os.WriteFile(seg, tear(b), 0o600); err != nil {
				t.Fatal(err)
			}
			l = open(t, dir, journal.FsyncAlways, 1<<20)
			defer l.Close()
			last, _ := l.LastIndex()
			if last < 58 || last > 60 {
				t.Fatalf("last index %d after the torn write", last)
			}
			check(t, l, 1, last, term1)
			torn, _ := filepath.Glob(filepath.Join(dir, "torn-*", "*"))
			if len(torn) != 1 {
				t.Fatalf("copies of the torn end: %v", torn)
			}
			store(t, l, last+1, 80, 1)
			check(t, l, 1, 80, term1)
		})
	}
}

// TestLogRefusesDamage: a damaged entry followed by intact ones, a
// damaged entry in a segment that is not the last, and a missing segment
// stop the log from opening with an error that names the file; nothing
// is removed.
func TestLogRefusesDamage(t *testing.T) {
	setup := func(t *testing.T) (string, []uint64) {
		dir := t.TempDir()
		l := open(t, dir, journal.FsyncAlways, 8<<10)
		store(t, l, 1, 200, 1)
		l.Close()
		segs, _ := listSegments(dir)
		return dir, segs
	}
	flip := func(t *testing.T, name string, at int64) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		b[at] ^= 0x40
		if err := os.WriteFile(name, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(t *testing.T, dir, file string) {
		t.Helper()
		var before []string
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { before = append(before, p); return nil })
		_, err := Open(Options{Dir: dir, Fsync: journal.FsyncAlways, SegmentSize: 8 << 10})
		var ce *CorruptError
		if !errors.As(err, &ce) || filepath.Base(ce.File) != filepath.Base(file) {
			t.Fatalf("opened a damaged log: %v", err)
		}
		var after []string
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { after = append(after, p); return nil })
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Fatalf("files changed: %v, then %v", before, after)
		}
	}
	t.Run("last segment", func(t *testing.T) {
		dir, segs := setup(t)
		name := filepath.Join(dir, segmentName(segs[len(segs)-1]))
		flip(t, name, 40)
		refused(t, dir, name)
	})
	t.Run("earlier segment", func(t *testing.T) {
		dir, segs := setup(t)
		name := filepath.Join(dir, segmentName(segs[1]))
		info, _ := os.Stat(name)
		flip(t, name, info.Size()-3)
		refused(t, dir, name)
	})
	t.Run("missing segment", func(t *testing.T) {
		dir, segs := setup(t)
		if err := os.Remove(filepath.Join(dir, segmentName(segs[1]))); err != nil {
			t.Fatal(err)
		}
		refused(t, dir, segmentName(segs[2]))
	})
}

// TestStableKeepsTermAndVote: the stable values survive a reopen, and a
// damaged file is refused.
func TestStableKeepsTermAndVote(t *testing.T) {
	name := filepath.Join(t.TempDir(), "stable")
	s, err := OpenStable(name)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 0 {
		t.Fatalf("term of a new store: %d, %v", v, err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStable(name)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.GetUint64([]byte("CurrentTerm")); v != 7 {
		t.Fatalf("term %d", v)
	}
	if v, _ := s.Get([]byte("LastVoteCand")); string(v) != "n2" {
		t.Fatalf("vote %q", v)
	}
	// Many changes: the file is rewritten once it grows, and keeps the
	// last value of each key.
	defer func(n int64) { stableCompactAt = n }(stableCompactAt)
	stableCompactAt = 2 << 10
	for i := uint64(1); i <= 300; i++ {
		if err := s.SetUint64([]byte("CurrentTerm"), i); err != nil {
			t.Fatal(err)
		}
	}
	if info, _ := os.Stat(name); info.Size() > 2*stableCompactAt {
		t.Fatalf("the stable file grew to %d bytes", info.Size())
	}
	s.Close()
	// The end of an append that a crash cut short: the value before it.
	b, _ := os.ReadFile(name)
	os.WriteFile(name, b[:len(b)-3], 0o600)
	s, err = OpenStable(name)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.GetUint64([]byte("CurrentTerm")); v != 299 {
		t.Fatalf("term %d after a torn append, want 299", v)
	}
	if v, _ := s.Get([]byte("LastVoteCand")); string(v) != "n2" {
		t.Fatalf("vote %q", v)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 301); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, _ = OpenStable(name)
	if v, _ := s.GetUint64([]byte("CurrentTerm")); v != 301 {
		t.Fatalf("term %d after a set that followed a torn append", v)
	}
	s.Close()
	b, _ = os.ReadFile(name)
	b[len(b)-1] ^= 1
	os.WriteFile(name, b, 0o600)
	if _, err := OpenStable(name); err == nil {
		t.Fatal("a damaged stable store was opened")
	}
}
