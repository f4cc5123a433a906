package journal

import (
	"fmt"
	"io"
	"slices"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// WriteSnapshot writes a snapshot of entries, every key's state as of the
// change seq, to w in the format of the snapshot files: a cluster's Raft
// snapshots are made of it. Unlike a snapshot file, it keeps volatile keys
// too: a replica restored from it must hold what the others hold.
func WriteSnapshot(w io.Writer, seq uint64, maxVersion hlc.Timestamp, entries []store.Change) error {
	_, err := writeSnapshot(w, seq, maxVersion, slices.Values(entries))
	return err
}

// ReadSnapshot reads a snapshot that WriteSnapshot wrote from r into m,
// which should be empty, and checks it whole. It reads r to its end.
func ReadSnapshot(r io.Reader, m *store.Machine) error {
	rr := newRecordReader(r)
	_, _, err := readSnapshot(rr, m, func(reason string) error {
		return fmt.Errorf("journal: snapshot stream damaged at offset %d: %s", rr.offset, reason)
	})
	return err
}
