package engine

import (
	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/store"
)

// Write is a decided write: the command the engine made of a SET, DEL or
// VDEL (or of an expiry), with everything that could differ between two
// runs fixed inside it, so that every node that applies it reaches the
// same state.
type Write struct {
	// Op is the request the write answers on this node; nil for an
	// expiry, and on the nodes that apply a write proposed elsewhere.
	Op *Op
	// Command is the machine's input; its Time and Version are decided.
	Command store.Command
	// ExpireVersion, when not zero, is the version of the expiry that
	// removes Command.Key first when the key is past its deadline at
	// Command.Time, so that its watchers hear of the expiry with a version
	// of its own before they hear of the command.
	ExpireVersion hlc.Timestamp
	// Result is what the write did, filled in when it is applied (and
	// given to Op).
	Result Result
	// Duplicate marks a write that a replicated log recognised as a
	// request applied before (a client sent it again): ApplyCommitted does
	// not apply it again and answers Op with Result, which the log filled
	// in from the first time.
	Duplicate bool
}

// Proposed says what became of a write that Log.Propose took.
type Proposed uint8

const (
	// Applied: the log applied the write at once, and nothing of it waits
	// to reach stable storage.
	Applied Proposed = iota + 1
	// AppliedUnflushed: the log applied the write at once and recorded its
	// effects; they are durable after the next Flush of the journal, and
	// its result and changes are delivered after that.
	AppliedUnflushed
	// Pending: the log took the write to replicate it; the write is
	// applied, on this node as on every other, when it is committed
	// (Node.ApplyCommitted), and its Op is completed then.
	Pending
	// Refused: the log cannot take writes now (a replicated log that
	// lost its leadership); the request is answered
	// "the state store is unavailable".
	Refused
)

// Log is the seam through which every decided write passes before it is
// applied (ADR 0004). Propose is called under the engine lock, in the order
// in which the writes' versions were decided, and must not block: it runs
// on the goroutine that read the request (often a read loop that serves
// many connections).
//
// There are two implementations. The local log of a single node (the
// default, see localLog) applies the write at once and records its effects
// in the journal; the results are delivered after the journal's group
// commit, exactly as ADR 0002 and 0003 describe. A replicated log (package
// cluster) appends the command to the Raft log and returns Pending; every
// node applies it once a majority holds it.
type Log interface {
	Propose(w *Write) Proposed
}

// localLog is the log of a single node: apply now, record the effects in
// the journal (if there is one), deliver after the flush.
type localLog struct{ n *Node }

var _ Log = localLog{}

func (l localLog) Propose(w *Write) Proposed {
	if l.n.applyWriteLocked(w) {
		return AppliedUnflushed
	}
	return Applied
}
