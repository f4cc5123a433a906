package raftlog

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/internal/journal"
)

// DefaultSegmentSize is the size past which a segment is closed and the
// next batch of entries starts a new one.
const DefaultSegmentSize = 16 << 20

// Options configures a Log.
type Options struct {
	// Dir holds the segments; it is created if missing.
	Dir string
	// Fsync is when appended entries reach stable storage.
	Fsync journal.Fsync
	// SegmentSize is the size past which a segment is closed; zero means
	// DefaultSegmentSize.
	SegmentSize int64
	// Logger receives the log lines; nil means slog.Default().
	Logger *slog.Logger
	// Timings, when set, receives how long writes and fsyncs take (its
	// Snapshot is not called: Raft's snapshots are not the log's).
	Timings *journal.Timings
	// Failed, when set, is called once when the log fails, with a lock
	// held: it must not block or call the log.
	Failed func(error)
}

// Log is the Raft log on segment files. Create it with Open and close it
// with Close.
type Log struct {
	opts Options
	log  *slog.Logger

	// wmu serializes the writers (StoreLogs, DeleteRange, the background
	// sync's choice of file); reads take only mu, so they go on while a
	// batch is written and synced.
	wmu    sync.Mutex
	buf    []byte                // guarded by wmu
	dirty  bool                  // guarded by wmu; written since the last sync
	failed error                 // guarded by wmu; a sync that failed or a file gone: nothing is written after it
	closed bool                  // guarded by wmu
	err    atomic.Pointer[error] // failed, for readers that must not wait for a write

	mu    sync.RWMutex
	segs  []*segment // guarded by mu; in order, contiguous
	first uint64     // guarded by mu; 0 when the log is empty
	last  uint64     // guarded by mu

	// dirInfo is the directory as it was at Open.
	dirInfo os.FileInfo

	stop chan struct{}
	done sync.WaitGroup
}

var (
	_ raft.LogStore          = (*Log)(nil)
	_ raft.MonotonicLogStore = (*Log)(nil)
)

// Open opens the log in opts.Dir, reading and indexing every segment.
func Open(opts Options) (*Log, error) {
	if opts.SegmentSize == 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	l := &Log{opts: opts, log: opts.Logger, stop: make(chan struct{})}
	dirInfo, err := os.Stat(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	l.dirInfo = dirInfo
	firsts, err := listSegments(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	for i, first := range firsts {
		s, err := openSegment(opts.Dir, first, i == len(firsts)-1, l.log.Warn)
		if err != nil {
			l.closeFiles()
			return nil, err
		}
		if s == nil {
			continue
		}
		if n := len(l.segs); n > 0 && l.segs[n-1].last()+1 != s.first {
			err := &CorruptError{File: s.name, Offset: 0, Reason: fmt.Sprintf(
				"it starts at entry %d, but the segment before it ends at entry %d", s.first, l.segs[n-1].last())}
			l.closeFiles()
			s.f.Close()
			return nil, err
		}
		l.segs = append(l.segs, s)
	}
	l.setBoundsLocked()
	if opts.Fsync == journal.FsyncEverySec {
		l.done.Add(1)
		go l.syncEverySecond()
	}
	return l, nil
}

// setBoundsLocked sets first and last from the segments.
func (l *Log) setBoundsLocked() {
	l.first, l.last = 0, 0
	for _, s := range l.segs {
		if len(s.offsets) == 0 {
			continue
		}
		if l.first == 0 {
			l.first = s.first
		}
		l.last = s.last()
	}
}

func (l *Log) closeFiles() {
	for _, s := range l.segs {
		s.f.Close()
	}
	l.segs = nil
}

// Close forces everything to stable storage and closes the files.
func (l *Log) Close() error {
	l.wmu.Lock()
	if l.closed {
		l.wmu.Unlock()
		return nil
	}
	l.closed = true
	l.wmu.Unlock()
	close(l.stop)
	l.done.Wait()
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if n := len(l.segs); n > 0 && l.failed == nil && l.dirty {
		err = journal.Fdatasync(l.segs[n-1].f)
	}
	for _, s := range l.segs {
		err = errors.Join(err, s.f.Close())
	}
	l.segs = nil
	return err
}

// IsMonotonic tells Raft that the log takes no gap between entries: after
// it installs a snapshot, Raft empties the log instead of leaving the
// entries before the snapshot in it.
func (l *Log) IsMonotonic() bool { return true }

// FirstIndex returns the index of the first entry, 0 for an empty log.
func (l *Log) FirstIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.first, nil
}

// LastIndex returns the index of the last entry, 0 for an empty log.
func (l *Log) LastIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.last, nil
}

// segmentOfLocked returns the segment that holds entry i, which is in
// the log.
func (l *Log) segmentOfLocked(i uint64) *segment {
	k := sort.Search(len(l.segs), func(k int) bool { return l.segs[k].first > i }) - 1
	return l.segs[k]
}

// GetLog reads entry index into out. The entry's data is its own memory.
func (l *Log) GetLog(index uint64, out *raft.Log) error {
	l.mu.RLock()
	if l.first == 0 || index < l.first || index > l.last {
		l.mu.RUnlock()
		return raft.ErrLogNotFound
	}
	s := l.segmentOfLocked(index)
	off, n := s.span(index)
	b := make([]byte, n)
	_, err := s.f.ReadAt(b, off)
	l.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("cluster: read entry %d from %s: %w", index, s.name, err)
	}
	payload, err := journal.ParseFrame(b)
	if err == nil {
		err = decodeEntry(payload, out)
	}
	if err == nil && out.Index != index {
		err = fmt.Errorf("entry %d where entry %d belongs", out.Index, index)
	}
	if err != nil {
		return &CorruptError{File: s.name, Offset: off, Reason: err.Error()}
	}
	return nil
}

// StoreLog appends one entry.
func (l *Log) StoreLog(e *raft.Log) error { return l.StoreLogs([]*raft.Log{e}) }

// StoreLogs appends entries, which follow the last entry (or start an
// empty log), with one write, synced as the policy says.
func (l *Log) StoreLogs(entries []*raft.Log) error {
	if len(entries) == 0 {
		return nil
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.failed != nil {
		return l.failed
	}
	if l.closed {
		return errClosed
	}
	l.mu.RLock()
	last := l.last
	var tail *segment
	if n := len(l.segs); n > 0 {
		tail = l.segs[n-1]
	}
	l.mu.RUnlock()
	next := entries[0].Index
	if last != 0 && next != last+1 {
		return fmt.Errorf("cluster: Raft log entry %d appended after entry %d", next, last)
	}
	for i, e := range entries {
		if e.Index != next+uint64(i) {
			return fmt.Errorf("cluster: Raft log entries %d and %d appended together", next, e.Index)
		}
	}
	if tail == nil || tail.size >= l.opts.SegmentSize || (last == 0 && tail.first != next) {
		s, err := l.rotate(tail, next)
		if err != nil {
			return err
		}
		tail = s
	}
	buf := l.buf[:0]
	offsets := make([]int64, len(entries))
	for i, e := range entries {
		offsets[i] = tail.size + int64(len(buf))
		start := len(buf)
		buf = append(buf, make([]byte, journal.FrameHeaderSize)...)
		buf = appendEntry(buf, e)
		buf = journal.FillFrame(buf, start)
	}
	l.buf = buf[:0]
	start := time.Now()
	if _, err := tail.f.WriteAt(buf, tail.size); err != nil {
		// Nothing is indexed: the next batch writes over what got written.
		return fmt.Errorf("cluster: write %s: %w", tail.name, err)
	}
	l.timed(func(t *journal.Timings) func(time.Duration) { return t.Write }, start)
	if l.opts.Fsync == journal.FsyncAlways {
		start = time.Now()
		if err := journal.Fdatasync(tail.f); err != nil {
			l.fail(tail, err)
			return l.failed
		}
		l.timed(func(t *journal.Timings) func(time.Duration) { return t.Fsync }, start)
	} else {
		l.dirty = true
	}
	if err := journal.CheckLinked(tail.f); err != nil {
		l.failGone(err)
		return l.failed
	}
	l.mu.Lock()
	tail.offsets = append(tail.offsets, offsets...)
	tail.size += int64(len(buf))
	if l.first == 0 {
		l.first = next
	}
	l.last = entries[len(entries)-1].Index
	l.mu.Unlock()
	if cap(l.buf) > 4<<20 {
		l.buf = nil // a rare large batch does not stay in memory
	}
	return nil
}

var errClosed = errors.New("cluster: the Raft log is closed")

// fail records a failed sync: what the file holds is unknown from then
// on, so the log takes no more entries.
func (l *Log) fail(s *segment, err error) {
	l.failed = fmt.Errorf("cluster: fsync %s: %w", s.name, err)
	l.published()
	l.log.Error("the Raft log cannot reach stable storage; the node takes no more entries", "err", err)
}

// rotate closes tail, durably whatever the policy, and starts the segment
// whose first entry is next. An empty tail is removed instead.
func (l *Log) rotate(tail *segment, next uint64) (*segment, error) {
	if tail != nil {
		if len(tail.offsets) == 0 {
			if err := l.removeSegments([]*segment{tail}); err != nil {
				return nil, err
			}
		} else if err := tail.f.Sync(); err != nil {
			l.fail(tail, err)
			return nil, l.failed
		}
	}
	l.dirty = false
	s, err := createSegment(l.opts.Dir, next)
	if err != nil {
		return nil, fmt.Errorf("cluster: new Raft log segment: %w", err)
	}
	l.mu.Lock()
	l.segs = append(l.segs, s)
	l.mu.Unlock()
	return s, nil
}

// removeSegments closes and removes segments, durably. The caller holds
// wmu.
func (l *Log) removeSegments(gone []*segment) error {
	if len(gone) == 0 {
		return nil
	}
	l.mu.Lock()
	kept := l.segs[:0]
	for _, s := range l.segs {
		if !contains(gone, s) {
			kept = append(kept, s)
		}
	}
	clear(l.segs[len(kept):])
	l.segs = kept
	first := l.first
	l.setBoundsLocked()
	if l.first != 0 && first > l.first && first <= l.last {
		// Entries deleted from the front of a segment kept whole stay
		// deleted.
		l.first = first
	}
	l.mu.Unlock()
	for _, s := range gone {
		s.f.Close()
		if err := os.Remove(s.name); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	if err := journal.SyncDir(l.opts.Dir); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

func contains(segs []*segment, s *segment) bool {
	for _, t := range segs {
		if t == s {
			return true
		}
	}
	return false
}

// DeleteRange deletes the entries lo to hi: a prefix of the log (Raft
// compacting it after a snapshot) or a suffix (entries that conflict with
// the leader's), or all of it.
func (l *Log) DeleteRange(lo, hi uint64) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return errClosed
	}
	l.mu.RLock()
	first, last := l.first, l.last
	segs := append([]*segment(nil), l.segs...)
	l.mu.RUnlock()
	if first == 0 || hi < first || lo > last || lo > hi {
		return nil
	}
	switch {
	case lo <= first && hi >= last:
		if err := l.removeSegments(segs); err != nil {
			return err
		}
		l.dirty = false
		return nil
	case lo <= first:
		return l.deletePrefix(segs, hi)
	case hi >= last:
		return l.deleteSuffix(segs, lo)
	}
	return fmt.Errorf("cluster: cannot delete Raft log entries %d to %d from the middle of %d to %d", lo, hi, first, last)
}

// deletePrefix deletes the entries up to hi, which is before the last:
// the segments that hold only such entries are removed; the others keep
// their files whole.
func (l *Log) deletePrefix(segs []*segment, hi uint64) error {
	var gone []*segment
	for _, s := range segs[:len(segs)-1] {
		if s.last() <= hi {
			gone = append(gone, s)
		}
	}
	if err := l.removeSegments(gone); err != nil {
		return err
	}
	l.mu.Lock()
	l.first = hi + 1
	l.mu.Unlock()
	return nil
}

// deleteSuffix deletes the entries from lo on, which is after the first:
// the segments that start at lo or later are removed, and the one that
// holds lo is cut before it.
func (l *Log) deleteSuffix(segs []*segment, lo uint64) error {
	var gone []*segment
	var cut *segment
	for _, s := range segs {
		switch {
		case s.first >= lo:
			gone = append(gone, s)
		case s.last() >= lo:
			cut = s
		}
	}
	if cut != nil {
		// Under mu: no read is under way in the bytes being cut.
		l.mu.Lock()
		at := cut.offsets[lo-cut.first]
		err := cut.f.Truncate(at)
		if err == nil {
			err = cut.f.Sync()
		}
		if err != nil {
			l.mu.Unlock()
			l.fail(cut, err)
			return l.failed
		}
		cut.offsets = cut.offsets[:lo-cut.first]
		cut.size = at
		l.last = lo - 1
		l.mu.Unlock()
	}
	return l.removeSegments(gone)
}

// syncEverySecond is the "everysec" policy's background sync. It syncs
// without holding the writers' lock, so that appends go on meanwhile.
func (l *Log) syncEverySecond() {
	defer l.done.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.wmu.Lock()
		var f *segment
		if n := len(l.segs); n > 0 && l.dirty && l.failed == nil && !l.closed {
			f = l.segs[n-1]
			l.dirty = false
		}
		l.wmu.Unlock()
		if f == nil {
			continue
		}
		start := time.Now()
		err := journal.Fdatasync(f.f)
		if err == nil {
			l.timed(func(t *journal.Timings) func(time.Duration) { return t.Fsync }, start)
		}
		if err != nil {
			l.wmu.Lock()
			if !l.closed && l.failed == nil && contains(l.segs, f) {
				l.fail(f, err)
			}
			l.wmu.Unlock()
		}
	}
}

// timed reports the time since start to the Timings field that field
// picks, when there is one.
func (l *Log) timed(field func(*journal.Timings) func(time.Duration), start time.Time) {
	if t := l.opts.Timings; t != nil {
		if record := field(t); record != nil {
			record(time.Since(start))
		}
	}
}
