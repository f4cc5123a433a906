package journal

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/dssio/dss/internal/store"
)

// Open locks the data directory, recovers the state it holds and opens the
// log for appending. The returned machine holds every change the journal
// kept.
func Open(opts Options) (*Journal, *store.Machine, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SnapshotAfter == 0 {
		opts.SnapshotAfter = defaultSnapshotAfter
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	lock, err := lockDir(opts.Dir)
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, restoringName)); err == nil {
		lock.Close()
		return nil, nil, fmt.Errorf("%w (%s)", ErrRestoring, opts.Dir)
	}
	j := &Journal{opts: opts, log: opts.Logger, lock: lock, stop: make(chan struct{})}
	if j.dirInfo, err = os.Stat(opts.Dir); err != nil {
		lock.Close()
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	m, err := j.recover()
	if err != nil {
		lock.Close()
		return nil, nil, err
	}
	if opts.Fsync == FsyncEverySec {
		j.syncing.Add(1)
		go j.syncEverySecond()
	}
	if opts.WatchInterval >= 0 {
		interval := opts.WatchInterval
		if interval == 0 {
			interval = defaultWatchInterval
		}
		j.syncing.Add(1)
		go j.watchFiles(interval)
	}
	return j, m, nil
}

// recover loads the newest snapshot, replays the segments after it, and
// opens the last segment (or a new one) for appending.
func (j *Journal) recover() (*store.Machine, error) {
	dir := j.opts.Dir
	files, err := listDir(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	for _, t := range files.temps {
		// An interrupted snapshot: the log still holds all it had.
		if err := os.Remove(filepath.Join(dir, t)); err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
	}
	m := store.New()
	var snapSeq uint64
	if n := len(files.snapshots); n > 0 {
		snapSeq = files.snapshots[n-1]
		j.snapshotFile = j.snapshotPath(snapSeq)
		_, stats, err := loadSnapshot(filepath.Join(dir, snapshotName(snapSeq)), m)
		if err != nil {
			return nil, err
		}
		j.lastSnapshot = stats
	}
	// Segments whose changes the snapshot holds entirely are what an
	// interrupted cleanup left behind.
	var live []uint64
	for i, first := range files.segments {
		if i+1 < len(files.segments) && files.segments[i+1] <= snapSeq+1 {
			if err := os.Remove(filepath.Join(dir, segmentName(first))); err != nil {
				return nil, fmt.Errorf("journal: %w", err)
			}
			continue
		}
		live = append(live, first)
	}
	for i, first := range live {
		last := i == len(live)-1
		size, err := j.replaySegment(filepath.Join(dir, segmentName(first)), m, snapSeq, last)
		if err != nil {
			return nil, err
		}
		j.sinceSnapshot += size
	}
	lastExists := false
	if n := len(live); n > 0 && live[n-1] > snapSeq {
		_, serr := os.Stat(filepath.Join(dir, segmentName(live[n-1])))
		lastExists = serr == nil
	}
	if lastExists {
		j.first = live[len(live)-1]
		j.file, err = os.OpenFile(filepath.Join(dir, segmentName(j.first)), os.O_WRONLY|os.O_APPEND, 0)
	} else {
		j.first = m.Seq() + 1
		j.file, err = createSegment(dir, j.first)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return m, nil
}

// replaySegment replays the changes after snapSeq from one segment into m
// and returns the segment's size. In the last segment, what a crash during
// a write leaves at the end (a record cut short, or a segment whose header
// never completed and that holds no record) is cut off the file after a
// copy is put aside; any other damage is an error.
func (j *Journal) replaySegment(name string, m *store.Machine, snapSeq uint64, last bool) (int64, error) {
	f, size, err := openSized(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rr, err := segmentReader(f)
	if err != nil {
		if last {
			// The crash came while the segment was being created, unless a
			// record follows the damaged header.
			next, serr := nextIntact(f, size, 1, isChange)
			if serr != nil {
				return 0, fmt.Errorf("journal: %w", serr)
			}
			if next < 0 {
				return 0, j.cutTail(name, size, 0, "a segment without a complete header and without any record")
			}
		}
		return 0, &CorruptError{File: name, Offset: 0, Reason: "unreadable segment header: " + err.Error()}
	}
	in := nodes{}
	var c store.Change
	for {
		at := rr.offset
		payload, err := rr.next()
		if err == io.EOF {
			return rr.offset, nil
		}
		if err == nil {
			if derr := decodeChange(payload, in, &c); derr != nil {
				return 0, &CorruptError{File: name, Offset: at, Reason: "malformed change record"}
			}
			if c.Seq > snapSeq {
				m.Replay(&c)
			}
			continue
		}
		if last {
			torn, terr := tornTail(f, size, at, err)
			if terr != nil {
				return 0, fmt.Errorf("journal: %w", terr)
			}
			if torn {
				return at, j.cutTail(name, size, at, err.Error())
			}
		}
		return 0, &CorruptError{File: name, Offset: at, Reason: err.Error()}
	}
}

// segmentReader reads the header of a segment and returns the reader of
// the records after it.
func segmentReader(f *os.File) (*recordReader, error) {
	rr := newRecordReader(f)
	payload, err := rr.next()
	if err == nil {
		_, err = decodeHeader(payload, recSegmentHeader)
	}
	return rr, err
}

// cutTail cuts the segment name (of size bytes) at offset at, the end of
// a write that a crash interrupted. The bytes it cuts are copied to a
// directory torn-<time> first, and the log line names the copy.
func (j *Journal) cutTail(name string, size, at int64, reason string) error {
	copyName := ""
	if size > at {
		aside, err := newAsideDir(filepath.Dir(name), "torn")
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		copyName = filepath.Join(aside, fmt.Sprintf("%s.from-%d", filepath.Base(name), at))
		if err := copyRange(name, at, copyName); err != nil {
			return fmt.Errorf("journal: keeping the end of %s: %w", name, err)
		}
	}
	j.log.Warn("discarding the incomplete end of the journal left by a crash",
		"file", name, "offset", at, "bytes", size-at, "reason", reason, "copy", copyName)
	if at == 0 {
		// Not even the header survived: the segment held nothing.
		if err := os.Remove(name); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		return syncDir(filepath.Dir(name))
	}
	if err := os.Truncate(name, at); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	return f.Sync()
}
