package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The data directory is watched while the journal runs: a segment or
// snapshot that is deleted, moved away or replaced (by a clean-up script,
// an operator, a full restore done by hand) would take what it holds with
// it at the next restart, while the server went on acknowledging writes
// into a file no restart reads. The journal fails instead, with an error
// that names the file: every later Flush returns it, so nothing more is
// acknowledged, and Err reports it (the server's /healthz).
//
// Flush looks at the segment it wrote before it returns (a file deleted
// while open has no link left); every WatchInterval the journal also
// looks at the paths: the segment, the snapshot recovery starts from and
// the directory itself must be where they were.

// ErrFileGone is the reason of the failure of a journal whose file went
// away while in use.
var ErrFileGone = errors.New("a file of the journal was removed, moved or replaced while in use; the writes since cannot be kept: restart dss to recover what is on disk")

const defaultWatchInterval = time.Second

// Err returns the error that stopped the journal, nil while it works.
func (j *Journal) Err() error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	return j.failed
}

// checkSegmentLocked returns an error if the segment being appended to
// was deleted. wmu is held.
func (j *Journal) checkSegmentLocked() error {
	if err := CheckLinked(j.file); err != nil {
		return fmt.Errorf("%w: %w", ErrFileGone, err)
	}
	return nil
}

// checkFilesLocked returns an error if a file recovery needs is not
// where it was: the segment being appended to, the snapshot recovery
// starts from, and the directory. wmu is held.
func (j *Journal) checkFilesLocked() error {
	if err := CheckInPlace(j.file, j.file.Name()); err != nil {
		return fmt.Errorf("%w: %w", ErrFileGone, err)
	}
	if err := CheckDir(j.opts.Dir, j.dirInfo); err != nil {
		return fmt.Errorf("%w: %w", ErrFileGone, err)
	}
	j.mu.Lock()
	snap := j.snapshotFile
	j.mu.Unlock()
	if snap != "" {
		if _, err := os.Stat(snap); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s is gone", ErrFileGone, snap)
		}
	}
	return nil
}

// CheckLinked returns an error if the open file f was deleted: the writes
// into it reach no file a restart reads. It costs one fstat, so a writer
// can call it before it acknowledges what it wrote.
func CheckLinked(f *os.File) error { return checkLinked(f, f.Name()) }

func checkLinked(f *os.File, name string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", name, err)
	}
	if n, ok := linkCount(fi); ok && n == 0 {
		return fmt.Errorf("%s was deleted", name)
	}
	return nil
}

// CheckInPlace returns an error if the open file f is no longer the file
// at name (its name, unless it was opened under another and renamed):
// deleted, moved away or replaced by another.
func CheckInPlace(f *os.File, name string) error {
	if err := checkLinked(f, name); err != nil {
		return err
	}
	open, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", name, err)
	}
	at, err := os.Stat(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s is gone", name)
	case err != nil:
		return fmt.Errorf("stat %s: %w", name, err)
	case !os.SameFile(open, at):
		return fmt.Errorf("%s was replaced", name)
	}
	return nil
}

// CheckDir returns an error if the directory dir is gone or, when was is
// not nil, is no longer the directory was describes.
func CheckDir(dir string, was os.FileInfo) error {
	if fi, err := os.Stat(dir); err != nil || (was != nil && !os.SameFile(fi, was)) {
		return fmt.Errorf("the data directory %s was removed or replaced", dir)
	}
	return nil
}

// failLocked stops the journal for err and logs why; wmu is held.
func (j *Journal) failLocked(err error) {
	if j.failed != nil {
		return
	}
	j.failed = fmt.Errorf("journal: %w", err)
	j.log.Error("the journal cannot keep what it is given; writes are refused from now on", "dir", j.opts.Dir, "err", err)
}

// watchFiles looks at the journal's files every interval until the
// journal closes.
func (j *Journal) watchFiles(interval time.Duration) {
	defer j.syncing.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
		}
		j.wmu.Lock()
		if !j.closed && j.failed == nil {
			if err := j.checkFilesLocked(); err != nil {
				j.failLocked(err)
			}
		}
		j.wmu.Unlock()
	}
}

// snapshotPath is the path of the snapshot of seq.
func (j *Journal) snapshotPath(seq uint64) string {
	return filepath.Join(j.opts.Dir, snapshotName(seq))
}
