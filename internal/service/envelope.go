package service

import (
	"strings"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/wire"
)

// Envelope is what a request's user properties say. The zero value is a
// request without any; Add reads them one at a time, the last of a
// repeated property winning.
type Envelope struct {
	// Timestamp and FencingToken are the texts of __ts and __ft, when
	// HasTimestamp and HasFencingToken are set.
	Timestamp, FencingToken       string
	HasTimestamp, HasFencingToken bool
	// Version is __protVer, "" when absent.
	Version string
	// Persist is set by aio-persistence=true.
	Persist bool
	// Stale is set by dss-consistency=stale.
	Stale bool
	// WithTTL is set by dss-ttl=true: a GET is answered with the time its
	// key has left.
	WithTTL bool
	// SourceID is __srcId, "" when absent.
	SourceID string
}

// Add reads one user property of a request; those the store does not use
// are ignored.
func (e *Envelope) Add(key, val string) {
	switch key {
	case wire.PropTimestamp:
		e.Timestamp, e.HasTimestamp = val, true
	case wire.PropFencingToken:
		e.FencingToken, e.HasFencingToken = val, true
	case wire.PropProtocolVersion:
		e.Version = val
	case wire.PropPersistence:
		e.Persist = strings.EqualFold(val, "true")
	case wire.PropConsistency:
		e.Stale = strings.EqualFold(val, wire.ConsistencyStale)
	case wire.PropTTL:
		e.WithTTL = strings.EqualFold(val, "true")
	case wire.PropSourceID:
		e.SourceID = val
	}
}

// Supported reports whether the request is of an RPC protocol version the
// store speaks; one that is not is answered with UnsupportedVersion.
func (e *Envelope) Supported() bool { return wire.SupportedVersion(e.Version) }

// Limits bound a request's key and value, in bytes.
type Limits struct {
	MaxKeySize, MaxValueSize int
}

// Prepare fills op from a request's payload and envelope: the request and
// its options and timestamps. It returns the protocol error that answers
// the request instead, if any, in the order of checks of docs/protocol.md.
// may, when not nil, says whether the requester may make the request.
//
// op.Request refers to payload: the caller keeps payload as long as op.
func Prepare(op *engine.Op, payload []byte, env *Envelope, lim Limits, may func(*wire.Request) bool) *wire.Error {
	// Without aio-persistence=true a key need not survive a restart; the
	// engine decides whether that matters.
	op.Volatile = !env.Persist
	op.Stale = env.Stale
	op.WithTTL = env.WithTTL
	// The request refers to the payload, not to the argument list: the
	// list can live on this goroutine's stack.
	var args [6][]byte // room for the arguments of any valid request
	req, _, perr := wire.ParseRequest(payload, args[:0])
	if perr != nil {
		return perr
	}
	// may is asked about op.Request, which lives where op does: the
	// address of a request on this stack would move it to the heap.
	op.Request = req
	r := &op.Request
	switch {
	case may != nil && !may(r):
		perr = wire.ErrNotAuthorized
	case len(r.Key) > lim.MaxKeySize:
		perr = wire.ErrKeyTooLong
	case len(r.Value) > lim.MaxValueSize:
		perr = wire.ErrValueTooLong
	case r.Verb == wire.VerbSet && !env.HasTimestamp:
		perr = wire.ErrMissingTimestamp
	default:
		perr = readTimestamps(op, env)
	}
	if perr != nil {
		// A request answered with an error is counted as one that did
		// not parse.
		op.Request = wire.Request{}
	}
	return perr
}

func readTimestamps(op *engine.Op, env *Envelope) *wire.Error {
	var err error
	if env.HasTimestamp {
		if op.Timestamp, err = hlc.Parse(env.Timestamp); err != nil {
			return wire.ErrMalformedTimestamp
		}
		op.HasTimestamp = true
	}
	if env.HasFencingToken {
		if op.Fence, err = hlc.Parse(env.FencingToken); err != nil {
			return wire.ErrMalformedTimestamp
		}
		op.HasFence = true
	}
	return nil
}
