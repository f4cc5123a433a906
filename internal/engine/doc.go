// Package engine runs the state machine of package store for one node: it
// is the proposer that decides what the machine cannot (the time, the new
// version, which keys expired), the single place where commands are put in
// order, and the pipeline that hands results back once they may be seen.
//
// Every request passes three points:
//
//  1. Submit (on the caller's goroutine, under the engine lock): the
//     request is checked against the clock, turned into a command, applied
//     to the machine and recorded in the journal, if there is one.
//  2. The journal flush (on the delivery goroutine): what was recorded
//     reaches stable storage. Requests that arrive meanwhile are recorded
//     together and share the next flush (group commit).
//  3. Delivery (on the delivery goroutine, in apply order): each request's
//     Done is called and each change is handed to the notifier.
//
// So no response and no notification is ever sent for a change that a
// crash could still take back, and every watcher hears of the changes of
// a key in the order they were applied.
package engine
