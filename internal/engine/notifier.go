package engine

import "github.com/dssio/dss/internal/store"

// Notifier keeps the KEYNOTIFY registrations of this node's clients.
//
// The engine calls KeyNotify and Changed under its lock, in apply order, so
// a registration hears of exactly the changes applied after it. The
// deliver functions that Changed returns run later, on the delivery
// goroutine, in the same order.
type Notifier interface {
	// KeyNotify carries out a KEYNOTIFY request: it registers or, for
	// STOP, unregisters op's client for op.Request.Key (a pattern of keys
	// when op.Request.Pattern is set) and sets op.Result.Watched.
	KeyNotify(op *Op)
	// Changed returns the function that tells the current watchers of
	// c.Key (by the key or by a pattern) about c, once each, or nil when
	// nobody watches the key.
	Changed(c *store.Change) (deliver func())
	// Watched returns every key that has a watcher now.
	Watched() []string
	// WatchesPatterns reports whether a registration for a pattern of
	// keys exists now: then every key may have a watcher.
	WatchesPatterns() bool
}
