package journal

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// SnapshotWriter writes one snapshot. The engine calls Write with the keys
// in chunks, then Finish, or Abort when it gives up.
type SnapshotWriter struct {
	j     *Journal
	seq   uint64
	tmp   string
	f     *os.File
	w     *bufio.Writer
	buf   []byte
	count uint64
	size  int64
	data  int64 // bytes of keys and values written
	err   error
	began time.Time
}

// BeginSnapshot starts a snapshot of every change up to seq. It is called
// under the engine lock, with seq the Seq of the machine's last change:
// the changes after it go to a new segment.
func (j *Journal) BeginSnapshot(seq uint64, maxVersion hlc.Timestamp) (*SnapshotWriter, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.snapshotting {
		return nil, errors.New("journal: a snapshot is already being written")
	}
	j.snapshotting = true
	j.sinceSnapshot = 0
	j.marks = append(j.marks, mark{offset: len(j.pending), first: seq + 1})
	w := &SnapshotWriter{j: j, seq: seq, tmp: filepath.Join(j.opts.Dir, snapshotName(seq)+".tmp"), began: time.Now()}
	w.buf = appendRecord(nil, appendHeader(nil, header{kind: recSnapshotHeader, seq: seq, maxVersion: maxVersion}))
	return w, nil
}

// Write adds keys to the snapshot; keys that need not survive a restart
// are left out.
func (w *SnapshotWriter) Write(entries []store.Change) error {
	if w.err != nil {
		return w.err
	}
	if w.f == nil {
		if w.f, w.err = os.OpenFile(w.tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644); w.err != nil {
			return w.err
		}
		w.w = bufio.NewWriterSize(w.f, 1<<20)
	}
	for i := range entries {
		if entries[i].Volatile {
			continue
		}
		var start int
		w.buf, start = beginRecord(w.buf)
		w.buf = appendChange(w.buf, &entries[i])
		w.buf = endRecord(w.buf, start)
		w.count++
		w.data += int64(len(entries[i].Key) + len(entries[i].Value))
	}
	w.size += int64(len(w.buf))
	_, w.err = w.w.Write(w.buf)
	w.buf = w.buf[:0]
	return w.err
}

// Finish completes the snapshot, makes it durable, and removes the
// segments and snapshots it replaces.
func (w *SnapshotWriter) Finish(maxVersion hlc.Timestamp) error {
	if err := w.Write(nil); err != nil {
		w.Abort()
		return err
	}
	_, err := w.w.Write(appendRecord(nil, snapshotFooter(w.count, maxVersion)))
	if err == nil {
		err = w.w.Flush()
	}
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	final := filepath.Join(w.j.opts.Dir, snapshotName(w.seq))
	if err == nil {
		err = os.Rename(w.tmp, final)
	}
	if err == nil {
		err = syncDir(w.j.opts.Dir)
	}
	if err != nil {
		w.f = nil
		w.Abort()
		return fmt.Errorf("journal: snapshot: %w", err)
	}
	// The new segment must exist before the old ones may go.
	if err := w.j.Flush(); err != nil {
		return err
	}
	w.j.mu.Lock()
	w.j.snapshotting = false
	w.j.lastSnapshot = snapshotStats{size: w.size, keys: int64(w.count), data: w.data}
	w.j.mu.Unlock()
	err = w.j.removeBefore(w.seq)
	if t := w.j.opts.Timings; t != nil && err == nil {
		timed(t.Snapshot, w.began)
	}
	return err
}

// Abort gives the snapshot up; the log keeps everything.
func (w *SnapshotWriter) Abort() {
	if w.f != nil {
		w.f.Close()
	}
	os.Remove(w.tmp)
	w.j.mu.Lock()
	w.j.snapshotting = false
	w.j.mu.Unlock()
}

// removeBefore removes the segments whose changes are all at or before
// seq, and the snapshots older than the one at seq.
func (j *Journal) removeBefore(seq uint64) error {
	files, err := listDir(j.opts.Dir)
	if err != nil {
		return err
	}
	removed := false
	for _, first := range files.segments {
		if first <= seq {
			if err := os.Remove(filepath.Join(j.opts.Dir, segmentName(first))); err != nil {
				return fmt.Errorf("journal: %w", err)
			}
			removed = true
		}
	}
	for _, s := range files.snapshots {
		if s < seq {
			if err := os.Remove(filepath.Join(j.opts.Dir, snapshotName(s))); err != nil {
				return fmt.Errorf("journal: %w", err)
			}
			removed = true
		}
	}
	if removed {
		return syncDir(j.opts.Dir)
	}
	return nil
}

// loadSnapshot replays the snapshot file name into m. It returns the
// snapshot's seq and what it holds.
func loadSnapshot(name string, m *store.Machine) (uint64, snapshotStats, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, snapshotStats{}, err
	}
	defer f.Close()
	rr := newRecordReader(f)
	return readSnapshot(rr, m, func(reason string) error {
		return &CorruptError{File: name, Offset: rr.offset, Reason: reason}
	})
}

// readSnapshot replays the snapshot that rr reads into m, which should be
// empty, and checks it whole: the header, every key record, the footer's
// count and nothing after the footer. corrupt makes the error for a
// damage it finds. It returns the snapshot's seq and what it holds.
func readSnapshot(rr *recordReader, m *store.Machine, corrupt func(reason string) error) (uint64, snapshotStats, error) {
	var stats snapshotStats
	payload, err := rr.next()
	if err != nil {
		return 0, stats, corrupt("unreadable header: " + err.Error())
	}
	h, err := decodeHeader(payload, recSnapshotHeader)
	if err != nil {
		return 0, stats, corrupt(err.Error())
	}
	in := nodes{}
	var c store.Change
	var count uint64
	for {
		payload, err := rr.next()
		if err == io.EOF {
			return 0, stats, corrupt("the snapshot ends before its footer")
		}
		if err != nil {
			return 0, stats, corrupt(err.Error())
		}
		if payload[0] == recSnapshotFooter {
			want, maxVersion, err := decodeSnapshotFooter(payload, in)
			if err != nil || want != count {
				return 0, stats, corrupt(fmt.Sprintf("footer counts %d keys, the snapshot holds %d", want, count))
			}
			m.Replay(&store.Change{Seq: h.seq, Version: maxVersionOf(h.maxVersion, maxVersion)})
			if _, err := rr.next(); err != io.EOF {
				return 0, stats, corrupt("data after the footer")
			}
			stats.size, stats.keys = rr.offset, int64(count)
			return h.seq, stats, nil
		}
		if err := decodeChange(payload, in, &c); err != nil || c.Deleted || c.Key == "" {
			return 0, stats, corrupt("malformed key record")
		}
		m.Replay(&c)
		count++
		stats.data += int64(len(c.Key) + len(c.Value))
	}
}

// writeSnapshotFile writes a snapshot of every key of m, as of m's last
// change, durably to a temporary file in dir. It returns the temporary
// name, the name the snapshot takes once the caller renames it, and its
// size.
func writeSnapshotFile(dir string, m *store.Machine) (tmp, final string, size int64, err error) {
	final = filepath.Join(dir, snapshotName(m.Seq()))
	tmp = final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return "", "", 0, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	durable := func(yield func(store.Change) bool) {
		for c := range m.Entries() {
			if !c.Volatile && !yield(c) {
				return
			}
		}
	}
	if size, err = writeSnapshot(f, m.Seq(), m.MaxVersion(), durable); err != nil {
		return "", "", 0, err
	}
	if err = f.Sync(); err != nil {
		return "", "", 0, err
	}
	if err = f.Close(); err != nil {
		return "", "", 0, err
	}
	return tmp, final, size, nil
}

// writeSnapshot writes a snapshot of entries, every key's state as of the
// change seq, to w: the header, a record for each key and the footer that
// counts them. It returns the bytes written.
func writeSnapshot(w io.Writer, seq uint64, maxVersion hlc.Timestamp, entries iter.Seq[store.Change]) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	buf := appendRecord(nil, appendHeader(nil, header{kind: recSnapshotHeader, seq: seq, maxVersion: maxVersion}))
	var size int64
	var count uint64
	for c := range entries {
		var start int
		buf, start = beginRecord(buf)
		buf = endRecord(appendChange(buf, &c), start)
		count++
		if len(buf) >= 1<<20 {
			size += int64(len(buf))
			if _, err := bw.Write(buf); err != nil {
				return size, err
			}
			buf = buf[:0]
		}
	}
	buf = appendRecord(buf, snapshotFooter(count, maxVersion))
	size += int64(len(buf))
	if _, err := bw.Write(buf); err != nil {
		return size, err
	}
	return size, bw.Flush()
}
