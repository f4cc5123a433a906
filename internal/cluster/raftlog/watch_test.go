package raftlog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/internal/journal"
)

// TestLogFailsWhenASegmentGoesAway: a segment deleted while the log is
// open fails the next batch at once (its file has no link left); one
// moved away, replaced, or an older segment deleted, fails the next
// Check. From then on nothing is appended, and Err says which file.
func TestLogFailsWhenASegmentGoesAway(t *testing.T) {
	for _, c := range []struct {
		name string
		// which segment: the one appended to, or the first of several
		older  bool
		atOnce bool
		remove func(t *testing.T, path string)
	}{
		{"tail deleted", false, true, func(t *testing.T, path string) { must(t, os.Remove(path)) }},
		{"tail moved away", false, false, func(t *testing.T, path string) { must(t, os.Rename(path, path+".moved")) }},
		{"tail replaced", false, false, func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			must(t, err)
			must(t, os.Rename(path, path+".old"))
			must(t, os.WriteFile(path, b, 0o600))
		}},
		{"older segment deleted", true, false, func(t *testing.T, path string) { must(t, os.Remove(path)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l := open(t, dir, journal.FsyncAlways, 4<<10)
			defer l.Close()
			store(t, l, 1, 100, 1)
			segs, _ := filepath.Glob(filepath.Join(dir, "log-*.seg"))
			if len(segs) < 2 {
				t.Fatalf("segments %v", segs)
			}
			victim := segs[len(segs)-1]
			if c.older {
				victim = segs[0]
			}
			if err := l.Check(); err != nil {
				t.Fatalf("Check before: %v", err)
			}
			c.remove(t, victim)
			err := l.StoreLogs([]*raft.Log{entry(101, 1)})
			if c.atOnce != (err != nil) {
				t.Fatalf("the batch after the segment was %s: %v", c.name, err)
			}
			if err := l.Check(); !errors.Is(err, ErrFileGone) {
				t.Fatalf("Check: %v, want %v", err, ErrFileGone)
			}
			if err := l.Err(); !errors.Is(err, ErrFileGone) || !strings.Contains(err.Error(), victim) {
				t.Fatalf("Err: %v, want %v naming %s", err, ErrFileGone, victim)
			}
			if err := l.StoreLogs([]*raft.Log{entry(102, 1)}); !errors.Is(err, ErrFileGone) {
				t.Fatalf("a batch after the failure: %v", err)
			}
		})
	}
}

// TestLogFailsWhenItsDirectoryGoesAway: the log's directory moved away
// fails the next Check.
func TestLogFailsWhenItsDirectoryGoesAway(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "log")
	l := open(t, dir, journal.FsyncAlways, 0)
	defer l.Close()
	store(t, l, 1, 10, 1)
	must(t, os.Rename(dir, dir+".moved"))
	if err := l.Check(); !errors.Is(err, ErrFileGone) {
		t.Fatalf("Check: %v, want %v", err, ErrFileGone)
	}
}

// TestStableRepairsItsFile: the term and vote file deleted, moved away or
// replaced while open is written again from memory, and a reopen reads
// the values; in place, Repair changes nothing.
func TestStableRepairsItsFile(t *testing.T) {
	for _, c := range []struct {
		name   string
		remove func(t *testing.T, path string)
	}{
		{"deleted", func(t *testing.T, path string) { must(t, os.Remove(path)) }},
		{"moved away", func(t *testing.T, path string) { must(t, os.Rename(path, path+".moved")) }},
		{"replaced by an empty file", func(t *testing.T, path string) {
			must(t, os.Rename(path, path+".old"))
			must(t, os.WriteFile(path, nil, 0o600))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "stable")
			s, err := OpenStable(name)
			must(t, err)
			must(t, s.SetUint64([]byte("CurrentTerm"), 7))
			must(t, s.Set([]byte("LastVoteCand"), []byte("n2")))
			if found, err := s.Repair(); found != nil || err != nil {
				t.Fatalf("Repair of a file in place: %v, %v", found, err)
			}
			c.remove(t, name)
			found, err := s.Repair()
			if found == nil || err != nil || !strings.Contains(found.Error(), name) {
				t.Fatalf("Repair: found %v, err %v", found, err)
			}
			// Written again: a later Set appends to the file at its name.
			must(t, s.SetUint64([]byte("CurrentTerm"), 8))
			must(t, s.Close())
			s, err = OpenStable(name)
			must(t, err)
			defer s.Close()
			if v, _ := s.GetUint64([]byte("CurrentTerm")); v != 8 {
				t.Fatalf("term after reopen %d, want 8", v)
			}
			if v, _ := s.Get([]byte("LastVoteCand")); string(v) != "n2" {
				t.Fatalf("vote after reopen %q, want n2", v)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
