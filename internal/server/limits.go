package server

import (
	"github.com/dssio/dss/internal/store"
)

// The defaults of the limits in Config.
const (
	// DefaultMaxPacketSize is the vendor's default message size: a client
	// that works against its broker works against dss.
	DefaultMaxPacketSize = 64 << 20
	// DefaultMaxKeys is the largest keyspace the benchmarks measure.
	DefaultMaxKeys = 10_000_000
	// DefaultMaxWatchesPerClient bounds one connection's registrations.
	DefaultMaxWatchesPerClient = 10_000
	// DefaultMaxSubscriptionsPerClient bounds one session's topic
	// filters.
	DefaultMaxSubscriptionsPerClient = 10_000
	// DefaultMaxSessionQueueBytes holds two messages of the largest
	// default packet for a session without a connection.
	DefaultMaxSessionQueueBytes = 2 * DefaultMaxPacketSize
)

// defaultMaxStoreBytes is a quarter of the machine's memory: the store
// holds about twice its data's size in memory (index, records, the
// journal's and snapshot's buffers), and the broker needs room too.
func defaultMaxStoreBytes() int64 { return machineMemory() / 4 }

// defaultMaxQueuedBytes is a sixteenth of the machine's memory: the
// messages queued for sessions without a connection are held in memory,
// where the garbage collector's headroom may double them, beside the
// store.
func defaultMaxQueuedBytes() int64 { return machineMemory() / 16 }

// storeLimits returns the state machine's limits in cfg (after defaults).
func storeLimits(cfg Config) store.Limits {
	return store.Limits{MaxKeys: max(cfg.MaxKeys, 0), MaxBytes: max(cfg.MaxStoreBytes, 0)}
}
