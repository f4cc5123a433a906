// Package tuning holds everything dss serve changes about its own process
// (the Go runtime's settings), in one place, each with the reason: the
// garbage collector's headroom (gc.go) and the number of threads that run
// Go code (threads.go). Only dss serve applies it, through ForServer:
// tests that run many servers in one process, and the client commands,
// keep the runtime's defaults.
package tuning

import "log/slog"

// Options says what the server is about to do, as far as the tuning
// cares.
type Options struct {
	// SyncEveryWrite is set when the journal is synced before each
	// response (--fsync always with a data directory).
	SyncEveryWrite bool
	// ClusterNode is set for a node of a cluster (--cluster-listen): its
	// writes reach stable storage through the Raft log instead.
	ClusterNode bool
	Logger      *slog.Logger
}

// ForServer tunes the process for a dss server and returns the function
// that undoes what must be undone when the server stops.
func ForServer(o Options) (stop func()) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.twoProcs() {
		ensureTwoProcs(o.Logger)
	}
	gc := startGCTuner()
	return gc.Stop
}
