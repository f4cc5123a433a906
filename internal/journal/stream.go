package journal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// WriteSnapshot writes a snapshot of entries, every key's state as of the
// change seq, to w in the format of the snapshot files: a cluster's Raft
// snapshots are made of it. Unlike a snapshot file, it keeps volatile keys
// too: a replica restored from it must hold what the others hold.
func WriteSnapshot(w io.Writer, seq uint64, maxVersion hlc.Timestamp, entries []store.Change) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	buf := appendRecord(nil, appendHeader(nil, header{kind: recSnapshotHeader, seq: seq, maxVersion: maxVersion}))
	for i := range entries {
		var start int
		buf, start = beginRecord(buf)
		buf = endRecord(appendChange(buf, &entries[i]), start)
		if len(buf) >= 1<<20 {
			if _, err := bw.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	footer := []byte{recSnapshotFooter}
	footer = binary.AppendUvarint(footer, uint64(len(entries)))
	footer = appendVersion(footer, maxVersion)
	buf = appendRecord(buf, footer)
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	return bw.Flush()
}

// ReadSnapshot reads a snapshot that WriteSnapshot wrote from r into m,
// which should be empty, and checks it whole. It reads r to its end.
func ReadSnapshot(r io.Reader, m *store.Machine) error {
	rr := newRecordReader(r)
	corrupt := func(reason string) error {
		return fmt.Errorf("journal: snapshot stream damaged at offset %d: %s", rr.offset, reason)
	}
	payload, err := rr.next()
	if err != nil {
		return corrupt("unreadable header: " + err.Error())
	}
	h, err := decodeHeader(payload, recSnapshotHeader)
	if err != nil {
		return corrupt(err.Error())
	}
	in := nodes{}
	var c store.Change
	var count uint64
	for {
		payload, err := rr.next()
		if err == io.EOF {
			return corrupt("the snapshot ends before its footer")
		}
		if err != nil {
			return corrupt(err.Error())
		}
		if payload[0] == recSnapshotFooter {
			d := decoder{b: payload[1:]}
			want := d.uvarint()
			maxVersion := d.version(in)
			if d.err != nil || want != count {
				return corrupt(fmt.Sprintf("footer counts %d keys, the snapshot holds %d", want, count))
			}
			m.Replay(&store.Change{Seq: h.seq, Version: maxVersionOf(h.maxVersion, maxVersion)})
			if _, err := rr.next(); err != io.EOF {
				return corrupt("data after the footer")
			}
			return nil
		}
		if err := decodeChange(payload, in, &c); err != nil || c.Deleted || c.Key == "" {
			return corrupt("malformed key record")
		}
		m.Replay(&c)
		count++
	}
}
