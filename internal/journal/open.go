package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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
	j := &Journal{opts: opts, log: opts.Logger, lock: lock, stop: make(chan struct{})}
	m, err := j.recover()
	if err != nil {
		lock.Close()
		return nil, nil, err
	}
	if opts.Fsync == FsyncEverySec {
		j.syncing.Add(1)
		go j.syncEverySecond()
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
		_, size, err := loadSnapshot(filepath.Join(dir, snapshotName(snapSeq)), m)
		if err != nil {
			return nil, err
		}
		j.lastSnapshotSize = size
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
// and returns the segment's size. In the last segment, a record cut short
// by a crash is cut off the file; any other damage is an error.
func (j *Journal) replaySegment(name string, m *store.Machine, snapSeq uint64, last bool) (int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	rr, err := segmentReader(f)
	if err != nil {
		if last && (errors.Is(err, errTorn) || errors.Is(err, io.EOF) || errors.Is(err, errZeros)) {
			// The crash came while the segment was being created.
			return 0, j.truncateTail(name, 0, "a segment without a complete header")
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
		if last && tornTail(name, at, err) {
			return at, j.truncateTail(name, at, err.Error())
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

// tornTail reports whether a bad record at offset at of the file name is
// what a crash during the last write leaves: no intact record follows it.
// Damage with intact records after it is not a torn write, and cutting it
// off would lose them.
func tornTail(name string, at int64, err error) bool {
	if !errors.Is(err, errTorn) && !errors.Is(err, errZeros) && !errors.Is(err, errChecksum) {
		return false
	}
	data, rerr := os.ReadFile(name)
	if rerr != nil || at > int64(len(data)) {
		return false
	}
	return !intactRecordIn(data[at:], 1)
}

// intactRecordIn reports whether an intact change record starts anywhere
// in b at or after from.
func intactRecordIn(b []byte, from int) bool {
	for i := from; i+headerSize < len(b); i++ {
		size := int(binary.LittleEndian.Uint32(b[i:]))
		if size == 0 || size > len(b)-i-headerSize {
			continue
		}
		payload := b[i+headerSize : i+headerSize+size]
		if t := payload[0]; t != recPut && t != recDelete && t != recFloor {
			continue
		}
		if crc32.Checksum(payload, castagnoli) == binary.LittleEndian.Uint32(b[i+4:]) {
			return true
		}
	}
	return false
}

func (j *Journal) truncateTail(name string, at int64, reason string) error {
	j.log.Warn("discarding the incomplete end of the journal left by a crash",
		"file", name, "offset", at, "reason", reason)
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
