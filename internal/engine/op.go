package engine

import (
	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// Op is one request on its way through the engine. The submitter fills in
// the request fields and Done; the engine fills in Result.
type Op struct {
	Request wire.Request

	// Timestamp is the request's __ts, when HasTimestamp is set.
	Timestamp    hlc.Timestamp
	HasTimestamp bool
	// Fence is the request's __ft, when HasFence is set.
	Fence    hlc.Timestamp
	HasFence bool
	// Volatile marks a SET whose key need not survive a restart.
	Volatile bool
	// Stale asks a cluster node to answer a GET from its own machine at
	// once, without confirming with the leader that it is current.
	Stale bool
	// Readable, for a SCAN, says which keys the client may read; nil:
	// every key. It is called under the engine lock and must take no lock
	// of the binding.
	Readable func(key string) bool
	// MaxReplyBytes bounds the total length of the keys a SCAN page
	// answers; 0 means ScanReplyBytes.
	MaxReplyBytes int
	// WithTTL asks a GET for the time its key has left (Result.TTL).
	WithTTL bool
	// Caller identifies the requesting connection to the Notifier.
	Caller any
	// Client and Correlation identify the request among those a client
	// may send again (its client id and correlation data): a replicated
	// log recognises a write it has already applied. Correlation may
	// alias the request; a log copies what it keeps.
	Client      string
	Correlation []byte

	// Done is called exactly once, when the result may be sent: on the
	// delivery goroutine, or on the submitter's inside Submit (then Inline
	// is set). It must not block for long: the deliveries of all other
	// requests may wait behind it.
	Done func(*Op)
	// Inline reports that Done runs inside Submit, on the submitter's
	// goroutine.
	Inline bool

	Result Result
}

// Result is the outcome of an Op.
type Result struct {
	// Err is a protocol error that answers the request instead.
	Err *wire.Error
	// Outcome is what a SET, DEL or VDEL did.
	Outcome store.Outcome
	// Value is the value a GET found, when Found is set. It must not be
	// modified.
	Value []byte
	Found bool
	// Version is the version to report as __ts, when HasVersion is set.
	Version    hlc.Timestamp
	HasVersion bool
	// Info is what a KEYINFO found besides the value, and Now the time
	// (milliseconds) it read at, for the time left to the deadline.
	Info store.Info
	Now  int64
	// Watched reports for KEYNOTIFY STOP whether a registration existed.
	Watched bool
	// Keys are the keys of a SCAN page; they stay valid after the machine
	// changes. More reports that another page follows, from Position.
	Keys     []string
	More     bool
	Position wire.ScanPosition
	// TTL is the time a key found by a GET with Op.WithTTL has left, in
	// milliseconds (at least 1); 0 when it does not expire.
	TTL int64
}

func (r *Result) setVersion(v hlc.Timestamp) {
	r.Version, r.HasVersion = v, !v.IsZero()
}

// storeCondition maps a request's SET condition to the machine's.
var storeCondition = [...]store.Condition{
	wire.Always:           store.Always,
	wire.IfMissing:        store.IfMissing,
	wire.IfMissingOrEqual: store.IfMissingOrEqual,
}

// refusal maps the machine's reason for refusing a command to the
// protocol error that answers it.
func refusal(err error) *wire.Error {
	switch err {
	case nil:
		return nil
	case store.ErrFencingRequired:
		return wire.ErrFencingRequired
	case store.ErrFencingLower:
		return wire.ErrFencingLower
	case store.ErrQuotaExceeded:
		return wire.ErrQuotaExceeded
	}
	return wire.ErrUnknownCommand
}
