package server

import (
	"time"

	"github.com/dssio/dss/internal/broker"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
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
	// DefaultMaxTopicLevels is Mosquitto's bound on the levels of a
	// topic (CVE-2019-11779), far above what topics use.
	DefaultMaxTopicLevels = broker.DefaultMaxTopicLevels
	// DefaultMaxTopicLength is the protocol's bound, as EMQX and HiveMQ
	// have it: the topics of the state store hold client ids and keys,
	// which may be long (see --max-key-size).
	DefaultMaxTopicLength = wire.MaxTopicLen
	// DefaultMaxRetained bounds the retained messages: one per topic,
	// such as the last state of each of a plant's devices.
	DefaultMaxRetained = 1_000_000
	// DefaultHTTPMaxConnections leaves the MQTT listeners nearly every
	// descriptor while serving scrapers, health checks and backups.
	DefaultHTTPMaxConnections = 64
	// DefaultHTTPIdleTimeout is how long an HTTP connection may wait
	// for its next request: longer than a scrape interval.
	DefaultHTTPIdleTimeout = time.Minute
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

// defaultMaxRetainedBytes is a sixteenth of the memory, as for the
// queued messages: retained messages are held in memory too.
func defaultMaxRetainedBytes() int64 { return machineMemory() / 16 }

// storeLimits returns the state machine's limits in cfg (after defaults).
func storeLimits(cfg Config) store.Limits {
	return store.Limits{MaxKeys: max(cfg.MaxKeys, 0), MaxBytes: max(cfg.MaxStoreBytes, 0)}
}
