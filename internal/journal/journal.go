package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// Fsync says when written changes are forced to stable storage.
type Fsync int

const (
	// FsyncAlways forces every Flush to stable storage before it returns:
	// an acknowledged change survives a crash of the machine.
	FsyncAlways Fsync = iota
	// FsyncEverySec forces the log to stable storage once a second: a
	// crash of the machine loses at most about a second of changes; a
	// crash of the process alone loses none.
	FsyncEverySec
	// FsyncNo leaves it to the operating system.
	FsyncNo
)

func (f Fsync) String() string {
	switch f {
	case FsyncAlways:
		return "always"
	case FsyncEverySec:
		return "everysec"
	case FsyncNo:
		return "no"
	}
	return fmt.Sprintf("Fsync(%d)", int(f))
}

// ParseFsync reads "always", "everysec" or "no".
func ParseFsync(s string) (Fsync, error) {
	for _, f := range []Fsync{FsyncAlways, FsyncEverySec, FsyncNo} {
		if s == f.String() {
			return f, nil
		}
	}
	return 0, fmt.Errorf("unknown fsync policy %q: want always, everysec or no", s)
}

// Options configure a journal.
type Options struct {
	// Dir is the data directory; it is created if missing.
	Dir   string
	Fsync Fsync
	// SnapshotAfter is how many bytes of log since the last snapshot make
	// a new one due, at least; the log must also have outgrown the last
	// snapshot. Zero means 64 MiB.
	SnapshotAfter int64
	Logger        *slog.Logger
	// Timings, when set, receives how long writes, fsyncs and snapshots
	// take.
	Timings *Timings
}

// Journal is the on-disk log of one node. Append, Flush and BeginSnapshot
// are called by the engine as its Journal interface describes; Close once
// the engine is closed.
//
// Lock order: wmu, then mu. Flush holds wmu for the whole write and takes
// mu only to swap the pending buffer, so that Append (under the engine's
// lock) never waits for the disk.
type Journal struct {
	opts Options
	log  *slog.Logger
	lock *os.File

	mu            sync.Mutex
	pending       []byte        // guarded by mu; encoded records not yet written
	marks         []mark        // guarded by mu; where in pending a new segment starts
	sinceSnapshot int64         // guarded by mu; bytes appended since the last snapshot began
	lastSnapshot  snapshotStats // guarded by mu
	snapshotting  bool          // guarded by mu

	// wmu serializes everything that writes or syncs files.
	wmu       sync.Mutex
	file      *os.File // guarded by wmu; the segment being appended to
	first     uint64   // guarded by wmu; the first seq of that segment
	spare     []byte   // guarded by wmu
	dirty     bool     // guarded by wmu; written since the last sync
	failed    error    // guarded by wmu
	closed    bool     // guarded by wmu
	syncing   sync.WaitGroup
	stop      chan struct{}
	closeOnce sync.Once
}

// mark is a segment boundary in the pending records.
type mark struct {
	offset int
	first  uint64 // first seq of the new segment
}

const defaultSnapshotAfter = 64 << 20

// Append encodes c into memory; Flush writes it.
func (j *Journal) Append(c *store.Change) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	before := len(j.pending)
	var start int
	j.pending, start = beginRecord(j.pending)
	j.pending = appendChange(j.pending, c)
	j.pending = endRecord(j.pending, start)
	j.sinceSnapshot += int64(len(j.pending) - before)
	return nil
}

// Flush writes every appended record and, with FsyncAlways, forces it to
// stable storage. After an error every later Flush fails too: what the
// engine applied can no longer be made durable.
func (j *Journal) Flush() error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	if j.failed != nil {
		return j.failed
	}
	if j.closed {
		return errors.New("journal: closed")
	}
	j.mu.Lock()
	if len(j.pending) == 0 && len(j.marks) == 0 {
		j.mu.Unlock()
		return nil
	}
	// Appends go on into the spare buffer while this one is written; the
	// two must never share memory.
	buf, marks := j.pending, j.marks
	j.pending, j.marks = j.spare[:0], nil
	j.spare = nil
	j.mu.Unlock()
	start := time.Now()
	err := j.writeLocked(buf, marks)
	if t := j.opts.Timings; t != nil && err == nil {
		timed(t.Write, start)
	}
	if err == nil && j.opts.Fsync == FsyncAlways && j.dirty {
		err = j.syncLocked()
	}
	if cap(buf) <= 4<<20 {
		j.spare = buf[:0] // keep a reasonable buffer for the next round
	} else {
		j.spare = nil
	}
	if err != nil {
		j.failed = fmt.Errorf("journal: %w", err)
		return j.failed
	}
	return nil
}

// writeLocked writes buf to the segments, starting new ones at the marks.
func (j *Journal) writeLocked(buf []byte, marks []mark) error {
	off := 0
	for _, m := range marks {
		if err := j.writeFile(buf[off:m.offset]); err != nil {
			return err
		}
		off = m.offset
		if err := j.rotateLocked(m.first); err != nil {
			return err
		}
	}
	return j.writeFile(buf[off:])
}

func (j *Journal) writeFile(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := j.file.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", j.file.Name(), err)
	}
	j.dirty = true
	return nil
}

func (j *Journal) syncLocked() error {
	start := time.Now()
	if err := fdatasync(j.file); err != nil {
		return fmt.Errorf("fsync %s: %w", j.file.Name(), err)
	}
	if t := j.opts.Timings; t != nil {
		timed(t.Fsync, start)
	}
	j.dirty = false
	return nil
}

// rotateLocked closes the current segment, durably, and starts a new one
// whose first change is first.
func (j *Journal) rotateLocked(first uint64) error {
	if first == j.first {
		return nil // nothing happened since the segment began
	}
	if err := j.file.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", j.file.Name(), err)
	}
	if err := j.file.Close(); err != nil {
		return err
	}
	f, err := createSegment(j.opts.Dir, first)
	if err != nil {
		return err
	}
	j.file, j.first, j.dirty = f, first, false
	return nil
}

// createSegment creates a segment file with its header, durably.
func createSegment(dir string, first uint64) (*os.File, error) {
	name := filepath.Join(dir, segmentName(first))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	hdr := appendRecord(nil, appendHeader(nil, header{kind: recSegmentHeader, seq: first}))
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// syncEverySecond is the FsyncEverySec background sync.
//
// The fsync runs without the write lock, so that Flush goes on writing
// meanwhile: held, it stalled every request for the duration of the fsync
// once a second.
func (j *Journal) syncEverySecond() {
	defer j.syncing.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
		}
		j.wmu.Lock()
		f, due := j.file, j.dirty && j.failed == nil && !j.closed
		j.dirty = j.dirty && !due
		j.wmu.Unlock()
		if !due {
			continue
		}
		start := time.Now()
		err := fdatasync(f)
		if t := j.opts.Timings; t != nil && err == nil {
			timed(t.Fsync, start)
		}
		if err != nil {
			j.wmu.Lock()
			// A segment closed meanwhile was synced by its rotation.
			if f == j.file && !j.closed && j.failed == nil {
				j.failed = fmt.Errorf("journal: fsync %s: %w", f.Name(), err)
				j.log.Error("the journal cannot reach stable storage", "err", err)
			}
			j.wmu.Unlock()
		}
	}
}

// snapshotStats describes a snapshot file.
type snapshotStats struct {
	size int64 // bytes
	keys int64
	data int64 // bytes of keys and values
}

// keyOverhead is what a snapshot spends on a key beside its key and value
// bytes (framing, numbers, version, flags), in bytes: from the last
// snapshot when it holds keys, otherwise a typical figure.
func (s snapshotStats) keyOverhead() int64 {
	if s.keys == 0 {
		return 40
	}
	return max(0, (s.size-s.data)/s.keys)
}

// SnapshotDue reports whether a snapshot would make the data directory
// much smaller: the log has grown past SnapshotAfter and past the last
// snapshot, or the live data, keys keys of dataBytes key and value bytes,
// would make a snapshot less than half the last one, and at least
// SnapshotAfter bytes smaller (after a flood of keys was deleted or
// expired, the old snapshot would otherwise stay, and a restart would read
// all of it and then the deletions).
func (j *Journal) SnapshotDue(keys int, dataBytes int64) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.snapshotting || j.sinceSnapshot == 0 {
		return false
	}
	last := j.lastSnapshot
	if j.sinceSnapshot > max(j.opts.SnapshotAfter, last.size) {
		return true
	}
	live := dataBytes + int64(keys)*last.keyOverhead()
	return live < last.size/2 && last.size-live >= j.opts.SnapshotAfter
}

// Close writes what is pending, forces it to stable storage whatever the
// policy, and releases the data directory.
func (j *Journal) Close() error {
	err := j.Flush()
	j.closeOnce.Do(func() { close(j.stop) })
	j.syncing.Wait()
	j.wmu.Lock()
	defer j.wmu.Unlock()
	if !j.closed {
		j.closed = true
		if j.dirty && j.failed == nil {
			err = errors.Join(err, j.syncLocked())
		}
		err = errors.Join(err, j.file.Close())
		err = errors.Join(err, j.lock.Close())
	}
	return err
}

// Dir returns the data directory.
func (j *Journal) Dir() string { return j.opts.Dir }

// maxVersionOf returns the larger version.
func maxVersionOf(a, b hlc.Timestamp) hlc.Timestamp {
	if a.Before(b) {
		return b
	}
	return a
}
