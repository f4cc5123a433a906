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
	fi, err := j.file.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", j.file.Name(), err)
	}
	if n, ok := linkCount(fi); ok && n == 0 {
		return fmt.Errorf("%w: %s was deleted", ErrFileGone, j.file.Name())
	}
	return nil
}

// checkFilesLocked returns an error if a file recovery needs is not
// where it was: the segment being appended to, the snapshot recovery
// starts from, and the directory. wmu is held.
func (j *Journal) checkFilesLocked() error {
	if err := j.checkSegmentLocked(); err != nil {
		return err
	}
	open, err := j.file.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", j.file.Name(), err)
	}
	at, err := os.Stat(j.file.Name())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s is gone", ErrFileGone, j.file.Name())
	case err != nil:
		return fmt.Errorf("stat %s: %w", j.file.Name(), err)
	case !os.SameFile(open, at):
		return fmt.Errorf("%w: %s was replaced", ErrFileGone, j.file.Name())
	}
	if dir, err := os.Stat(j.opts.Dir); err != nil || (j.dirInfo != nil && !os.SameFile(dir, j.dirInfo)) {
		return fmt.Errorf("%w: the data directory %s was removed or replaced", ErrFileGone, j.opts.Dir)
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
