package engine

import (
	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// Journal records the machine's changes so that they survive a restart.
//
// Append is called under the engine lock for every change, in apply order;
// it only encodes. Flush is called on the delivery goroutine (and by the
// snapshot goroutine); when it returns nil, every change appended before
// the call is as durable as the journal's policy promises. Changes
// appended while a Flush runs wait for the next one.
//
// SnapshotDue is polled by the snapshot goroutine with the machine's
// number of keys and bytes of keys and values. BeginSnapshot is called
// under the engine lock with the Seq and maximum version of the machine:
// the journal starts a new segment for the changes after seq and returns
// the writer of the snapshot, which the engine fills in steps.
type Journal interface {
	Append(c *store.Change) error
	Flush() error
	SnapshotDue(keys int, dataBytes int64) bool
	BeginSnapshot(seq uint64, maxVersion hlc.Timestamp) (SnapshotWriter, error)
}

// SnapshotWriter receives the keys of one snapshot.
type SnapshotWriter interface {
	// Write adds keys; it is called outside the engine lock.
	Write(entries []store.Change) error
	// Finish makes the snapshot durable and compacts the journal.
	Finish(maxVersion hlc.Timestamp) error
	// Abort gives the snapshot up.
	Abort()
}
