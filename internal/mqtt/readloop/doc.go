// Package readloop reads many non-blocking connections on one goroutine.
//
// A Loop waits for all the connections added to it at once (Linux's
// epoll, itself waited for in the runtime's poller, so that an idle loop
// parks like any reader and holds no thread) and gives each connection
// that has data a turn, on the loop's goroutine, through its Handler. A
// connection in a loop needs no goroutine, stack or read buffer of its
// own while it waits; the turn reads with the loop's, which stay in the
// cache when thousands of connections take turns.
//
// The loop knows nothing of what it reads. A turn returns nil to stay,
// or an error to leave the loop: the connection is then handed back to
// its owner (Handler.Left). The owner can take a connection back itself
// at any time (TakeBack), and a closed loop hands back all it held.
// Every connection leaves once, by exactly one of those ways.
//
// Locks: a Loop's own, then a connection's Member. A turn holds only its
// connection's Member lock, for the whole turn; what it calls must not
// wait for the loop.
package readloop
