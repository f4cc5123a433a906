package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// A backup is one file that holds a consistent copy of a store, written
// while the server serves (dss snapshot save). It is a sequence of records
// framed as every journal file is (length, CRC-32C, payload):
//
//	header   recBackupHeader, "dss-backup", format version, the seq and
//	         maximum version when the copy began
//	...      key records (puts) and change records (puts, deletions,
//	         version floors), in the order the server wrote them
//	footer   recBackupFooter, the number of records before it, the seq and
//	         maximum version of the state the backup holds
//
// Replaying the records in order, each change skipped when its key's state
// already includes it, gives that state exactly.

const (
	recBackupHeader byte = 4
	recBackupFooter byte = 5
	backupMagic          = "dss-backup"
)

// ErrNotBackup reports a file that is not a dss backup.
var ErrNotBackup = errors.New("journal: not a dss backup")

// BackupWriter writes a backup to an io.Writer. It implements the engine's
// BackupWriter.
type BackupWriter struct {
	w       *bufio.Writer
	buf     []byte
	records uint64
	keys    uint64
	changes uint64
	n       int64
}

// NewBackupWriter returns a writer of a backup to w.
func NewBackupWriter(w io.Writer) *BackupWriter {
	return &BackupWriter{w: bufio.NewWriterSize(w, 1<<20)}
}

// Begin writes the header.
func (b *BackupWriter) Begin(seq uint64, maxVersion hlc.Timestamp) error {
	p := []byte{recBackupHeader}
	p = appendBytes(p, backupMagic)
	p = binary.AppendUvarint(p, formatVersion)
	p = binary.AppendUvarint(p, seq)
	p = appendVersion(p, maxVersion)
	return b.write(appendRecord(b.buf[:0], p))
}

// Keys writes the state of keys; keys that need not survive a restart are
// left out, as a snapshot leaves them out.
func (b *BackupWriter) Keys(entries []store.Change) error {
	buf := b.buf[:0]
	for i := range entries {
		if entries[i].Volatile {
			continue
		}
		var start int
		buf, start = beginRecord(buf)
		buf = endRecord(appendChange(buf, &entries[i]), start)
		b.records++
		b.keys++
	}
	return b.write(buf)
}

// Changes writes changes as the journal records them.
func (b *BackupWriter) Changes(changes []store.Change) error {
	buf := b.buf[:0]
	for i := range changes {
		var start int
		buf, start = beginRecord(buf)
		buf = endRecord(appendChange(buf, &changes[i]), start)
		b.records++
		b.changes++
	}
	return b.write(buf)
}

// Finish writes the footer and flushes.
func (b *BackupWriter) Finish(seq uint64, maxVersion hlc.Timestamp) error {
	p := []byte{recBackupFooter}
	p = binary.AppendUvarint(p, b.records)
	p = binary.AppendUvarint(p, seq)
	p = appendVersion(p, maxVersion)
	if err := b.write(appendRecord(b.buf[:0], p)); err != nil {
		return err
	}
	return b.w.Flush()
}

// Written returns how many key and change records and bytes were
// written so far.
func (b *BackupWriter) Written() (keys, changes uint64, bytes int64) {
	return b.keys, b.changes, b.n
}

func (b *BackupWriter) write(p []byte) error {
	b.buf = p[:0]
	n, err := b.w.Write(p)
	b.n += int64(n)
	return err
}

// BackupInfo describes a backup.
type BackupInfo struct {
	Seq        uint64 // the last change it holds
	MaxVersion hlc.Timestamp
	Records    uint64
	Bytes      int64
}

// ReadBackup reads a backup from r and checks it whole: every record's
// checksum and form, the footer's count, nothing after the footer. With m
// not nil it replays the backup into m (an empty machine); with m nil it
// only checks.
func ReadBackup(r io.Reader, m *store.Machine) (BackupInfo, error) {
	var info BackupInfo
	rr := newRecordReader(r)
	bad := func(reason string) error {
		return fmt.Errorf("journal: the backup is damaged at offset %d: %s", rr.offset, reason)
	}
	payload, err := rr.next()
	if err != nil {
		if err == io.EOF || errors.Is(err, errTorn) {
			return info, fmt.Errorf("%w: the file is empty or too short", ErrNotBackup)
		}
		return info, fmt.Errorf("%w: %v", ErrNotBackup, err)
	}
	d := decoder{b: payload}
	kind := d.byte()
	magic := string(d.bytes())
	version := d.uvarint()
	startSeq := d.uvarint()
	in := nodes{}
	startVersion := d.version(in)
	switch {
	case d.err != nil || kind != recBackupHeader || magic != backupMagic:
		return info, ErrNotBackup
	case version != formatVersion:
		return info, fmt.Errorf("journal: the backup has format version %d; this dss reads %d", version, formatVersion)
	}
	if m != nil {
		m.Replay(&store.Change{Seq: startSeq, Version: startVersion})
	}
	var c store.Change
	for {
		at := rr.offset
		payload, err := rr.next()
		switch {
		case err == io.EOF || errors.Is(err, errTorn):
			return info, bad("the backup ends before its footer: it is cut short")
		case err != nil:
			return info, bad(err.Error())
		}
		if payload[0] == recBackupFooter {
			d := decoder{b: payload[1:]}
			count := d.uvarint()
			info.Seq = d.uvarint()
			info.MaxVersion = d.version(in)
			if d.err != nil || len(d.b) != 0 {
				return info, bad("malformed footer")
			}
			if count != info.Records {
				return info, bad(fmt.Sprintf("the footer counts %d records, the backup holds %d", count, info.Records))
			}
			if info.Seq < startSeq {
				return info, bad("the footer's change number is below the header's")
			}
			if _, err := rr.next(); err != io.EOF {
				return info, bad("data after the footer")
			}
			if m != nil {
				m.Replay(&store.Change{Seq: info.Seq, Version: info.MaxVersion})
			}
			info.Bytes = rr.offset
			return info, nil
		}
		if err := decodeChange(payload, in, &c); err != nil {
			rr.offset = at
			return info, bad("malformed record")
		}
		info.Records++
		if m != nil {
			m.Replay(&c)
		}
	}
}
