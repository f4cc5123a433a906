// Package journal keeps a node's state on disk: an append-only log of the
// state machine's changes, compacted from time to time into a snapshot.
//
// # Files
//
// A data directory holds:
//
//	LOCK                       held by the running server (flock)
//	wal-<first seq>.log        log segments, in order of their names
//	snap-<seq>.snap            the snapshot of every change up to <seq>
//
// Every file is a sequence of records: a 4-byte length, a 4-byte CRC-32C
// of the payload, and the payload. The first record names the file's kind
// and format version.
//
// # Writing
//
// The engine appends each change under its lock (Append only encodes into
// memory) and calls Flush from its delivery goroutine before it answers
// the requests: Flush writes everything appended so far with one write and,
// with the "always" policy, one fsync. Requests that arrive meanwhile share
// the next Flush (group commit).
//
// # Snapshots
//
// When the log has grown enough, the engine starts a snapshot: the log
// moves on to a new segment, and the keys are copied into a new snapshot
// file in small steps while requests keep being served. Once the snapshot
// is on stable storage, the older segments and snapshots are removed. Keys
// changed while the snapshot was written may be in it in a later state;
// replaying the log skips changes that a key's state already includes.
//
// # Recovery
//
// Open loads the newest snapshot and replays the segments after it. What a
// crash during a write leaves at the end of the last segment (a record cut
// short, zeros the write never reached, a header that never completed with
// no record after it) is cut off with a log line, after a copy of the bytes
// went to a directory torn-<time>. Any other damage stops Open with an
// error that names the file and the offset. Repair then keeps every intact
// record, before and after the damage (records are framed with their
// length and a CRC-32C, so the next intact one is found again), writes a
// snapshot of what it read, and keeps the files it replaces in a directory
// damaged-<time>. Nothing is deleted to resolve damage.
package journal
