package journal

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/dssio/dss/internal/store"
)

// openWatched opens a journal that looks at its files every few
// milliseconds.
func openWatched(t *testing.T, dir string) *Journal {
	t.Helper()
	j, _, err := Open(Options{Dir: dir, Logger: quiet(), WatchInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func awaitFailure(t *testing.T, j *Journal) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !errors.Is(j.Err(), ErrFileGone) {
		if time.Now().After(deadline) {
			t.Fatalf("the journal did not fail: %v", j.Err())
		}
		time.Sleep(time.Millisecond)
	}
	if err := j.Flush(); !errors.Is(err, ErrFileGone) {
		t.Fatalf("Flush after the failure: %v", err)
	}
}

// A journal whose segment is deleted fails at its next Flush, before it
// reports the write durable; one whose segment or snapshot is moved
// away, or replaced, fails at its next look at its files.
func TestAJournalWhoseFilesGoAwayFails(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("an open file cannot be deleted or moved on Windows")
	}
	t.Run("segment deleted", func(t *testing.T) {
		dir := t.TempDir()
		j, m := open(t, dir)
		defer j.Close()
		history(t, j, m, 0, 10)
		if err := j.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(j.file.Name()); err != nil {
			t.Fatal(err)
		}
		_, changes := m.Apply(&store.Command{Op: store.OpSet, Key: []byte("k"), Value: []byte("v"), Version: ver(100)}, nil)
		if err := j.Append(&changes[0]); err != nil {
			t.Fatal(err)
		}
		if err := j.Flush(); !errors.Is(err, ErrFileGone) {
			t.Fatalf("Flush into a deleted segment: %v", err)
		}
	})
	for _, c := range []struct {
		name string
		file func(j *Journal) string
		gone func(path string) error
	}{
		{"segment moved", func(j *Journal) string { return j.file.Name() }, func(p string) error { return os.Rename(p, p+".moved") }},
		{"segment replaced", func(j *Journal) string { return j.file.Name() }, func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.WriteFile(p, nil, 0o644)
		}},
		{"snapshot deleted", func(j *Journal) string { return j.snapshotFile }, os.Remove},
		{"directory moved", func(j *Journal) string { return j.opts.Dir }, func(p string) error { return os.Rename(p, p+".moved") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			j, m := open(t, dir)
			history(t, j, m, 0, 10)
			snapshot(t, j, m)
			history(t, j, m, 10, 10)
			if err := j.Flush(); err != nil {
				t.Fatal(err)
			}
			_ = j.Close()
			w := openWatched(t, dir)
			if err := c.gone(c.file(w)); err != nil {
				t.Fatal(err)
			}
			awaitFailure(t, w)
		})
	}
}

// Snapshots, which replace files, do not make a watched journal fail.
func TestAWatchedJournalTakesSnapshots(t *testing.T) {
	dir := t.TempDir()
	j, m, err := Open(Options{Dir: dir, Logger: quiet(), WatchInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := range 20 {
		history(t, j, m, i*10, 10)
		if err := j.Flush(); err != nil {
			t.Fatal(err)
		}
		snapshot(t, j, m)
	}
	time.Sleep(10 * time.Millisecond) // a few looks after the last snapshot
	if err := j.Err(); err != nil {
		t.Fatal(err)
	}
}
