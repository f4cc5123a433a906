// Package store is the state store as a deterministic state machine.
//
// A Machine holds the keys, their values, versions, fencing tokens and
// expiry deadlines. It changes only through Apply, and everything that
// could differ between two runs (the current time, the new version, which
// keys expired) arrives inside the Command. So a single node, a node
// replaying its log after a crash and every replica of a cluster reach the
// same state from the same commands.
//
// Reads (Get) take the reader's clock and treat a key past its deadline as
// missing, whether or not an expiry command removed it yet.
//
// A Machine is not safe for concurrent use: its owner serializes calls.
package store
