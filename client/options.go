package client

import (
	"time"

	"github.com/dssio/dss/hlc"
)

// SetOption is an option of Set: a Condition, a TTL, a FencingToken or
// Persist.
type SetOption interface{ applySet(*setOptions) }

// DelOption is an option of Del and VDel: a FencingToken.
type DelOption interface{ applyDel(*delOptions) }

// LockOption is an option of Lock and TryLock: a TTL or a Holder.
type LockOption interface{ applyLock(*lockOptions) }

// GetOption is an option of Get: StaleRead.
type GetOption interface{ applyGet(*getOptions) }

// WatchOption is an option of Watch: InitialState or a MaxPending.
type WatchOption interface{ applyWatch(*watchOptions) }

type setOptions struct {
	cond    Condition
	ttl     time.Duration
	fence   hlc.Timestamp
	persist bool
}

type getOptions struct {
	stale bool
}

type delOptions struct {
	fence hlc.Timestamp
}

// Condition makes a Set conditional.
type Condition uint8

// The conditions of Set.
const (
	// Always sets unconditionally; it is the default.
	Always Condition = iota
	// IfMissing sets only if the key does not exist (NX).
	IfMissing
	// IfMissingOrEqual sets only if the key does not exist or already
	// holds the value being set (NEX). Renewing a lock's TTL is its use.
	IfMissingOrEqual
)

func (c Condition) applySet(o *setOptions) { o.cond = c }

// String returns the protocol's name of the condition: "", "NX" or "NEX".
func (c Condition) String() string {
	switch c {
	case IfMissing:
		return "NX"
	case IfMissingOrEqual:
		return "NEX"
	}
	return ""
}

// TTL makes a Set's key expire TTL after the Set (PX), rounded up to whole
// milliseconds; a Set without TTL removes an earlier expiry. For Lock, it
// is the lease's time to live (default 10 s).
type TTL time.Duration

func (t TTL) applySet(o *setOptions)   { o.ttl = time.Duration(t) }
func (t TTL) applyLock(o *lockOptions) { o.ttl = time.Duration(t) }

// FencingToken sends a fencing token (__ft) with a Set, Del or VDel,
// typically a Lease's Token. A key written with a token is protected: later
// writes must carry that token or a newer one.
type FencingToken hlc.Timestamp

func (f FencingToken) applySet(o *setOptions) { o.fence = hlc.Timestamp(f) }
func (f FencingToken) applyDel(o *delOptions) { o.fence = hlc.Timestamp(f) }

// StaleRead lets a Get through a cluster node be answered from that
// node's copy at once (the user property dss-consistency: stale), instead
// of after the node has confirmed with the leader that its copy is
// current. Such a read costs no round trip to the leader and is served
// also by a node cut off from the majority, but it may miss the latest
// writes; it never returns a write that was not committed. A single node
// answers every Get at once, with or without it.
var StaleRead GetOption = staleRead{}

type staleRead struct{}

func (staleRead) applyGet(o *getOptions) { o.stale = true }

// Persist asks for the key of a Set to survive a restart of the server
// (the user property aio-persistence: true). A server run with
// --persistence flagged keeps only the keys whose last Set carried it, as
// the vendor's service does; with --persistence all (dss's default) every
// key survives and the property changes nothing.
var Persist SetOption = persist{}

type persist struct{}

func (persist) applySet(o *setOptions) { o.persist = true }
