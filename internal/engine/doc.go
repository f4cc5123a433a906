// Package engine runs the state machine of package store for one node: it
// is the proposer that decides what the machine cannot (the time, the new
// version, which keys expired), the single place where commands are put in
// order, and the pipeline that hands results back once they may be seen.
//
// Every request passes three points:
//
//  1. Submit (on the caller's goroutine, under the engine lock): the
//     request is checked against the clock and turned into a command whose
//     time and version are decided, and the command is handed to the Log.
//     The local log of a single node applies it to the machine at once and
//     records its effects in the journal, if there is one; a replicated log
//     (package cluster) applies it on every node once it is committed
//     (ApplyCommitted). See ADR 0004.
//  2. The journal flush (on the delivery goroutine): what was recorded
//     reaches stable storage. Requests that arrive meanwhile are recorded
//     together and share the next flush (group commit).
//  3. Delivery (on the delivery goroutine, in apply order): each request's
//     Done is called and each change is handed to the notifier.
//
// So no response and no notification is ever sent for a change that a
// crash could still take back, and every watcher hears of the changes of
// a key in the order they were applied.
//
// Submit never waits: when MaxUndelivered requests and notifications are
// in the pipeline already, the request is answered "the state store is
// busy" at once, so that a read loop serving many connections never stalls
// behind the disk.
//
// # Lock order
//
// A lock may be taken while holding the locks above it, never the other
// way round:
//
//  1. Node.mu, the engine lock: the machine, the delivery queue, the
//     decisions of time and version.
//  2. Taken under Node.mu, each by itself and never one inside another:
//     the hlc.Clock's lock; the Journal's append lock (Append,
//     BeginSnapshot); the Notifier's lock (KeyNotify, Changed); the Log's
//     own lock (Propose).
//
// The journal's write lock (Flush) is taken without Node.mu, on the
// delivery and snapshot goroutines. Done and the functions that Changed
// returns are called without Node.mu, so they may take any lock of the
// binding (and may Submit again). A replicated log calls ApplyCommitted and
// Abandon without holding a lock of its own that Propose takes.
package engine
