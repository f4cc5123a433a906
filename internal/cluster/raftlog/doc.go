// Package raftlog keeps a cluster node's Raft log and its term and vote
// on disk, as hashicorp/raft's LogStore and StableStore.
//
// # The log
//
// The log is a sequence of append-only segment files in its directory,
// log-<first index>.seg, each a header record and then one record per
// entry, framed as the journal's records are (a length, a CRC-32C, the
// payload; see package journal). An index in memory holds the offset of
// every entry. StoreLogs writes a batch of entries with one write and,
// under the "always" policy, one fdatasync; "everysec" syncs once a
// second, "no" leaves it to the operating system. A segment is closed,
// durably whatever the policy, once it has grown past its size, and the
// next batch starts a new one.
//
// DeleteRange removes a prefix (after a snapshot: whole segments are
// removed once every entry in them is deleted, so a reopened log may
// start a little earlier than Raft last asked, with entries it already
// holds in its snapshot) or a suffix (entries that conflict with a new
// leader's: the segment is cut and later segments removed, durably,
// before the new entries are written).
//
// # Recovery
//
// Opening reads every segment. What a crash during a write leaves at the
// end of the last segment (a record cut short, zeros the write never
// reached) is cut off, after a copy of the bytes went to a directory
// torn-<time>, as the journal does. Any other damage stops the node with
// an error that names the file and the offset: nothing is deleted to
// resolve it.
//
// # Term and vote
//
// The stable values are a small file, stable, replaced whole (written
// aside, synced, renamed, the directory synced) on every change, whatever
// the policy: Raft's safety rests on them, and they change once an
// election.
package raftlog
