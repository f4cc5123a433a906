package store

import (
	"errors"

	"github.com/dssio/dss/hlc"
)

// Op is the operation of a command.
type Op uint8

// The operations of the state machine.
const (
	OpSet Op = iota + 1
	OpDel
	OpVDel
	// OpExpire removes the key if its deadline is at or before the
	// command's Time.
	OpExpire
)

func (o Op) String() string {
	switch o {
	case OpSet:
		return "SET"
	case OpDel:
		return "DEL"
	case OpVDel:
		return "VDEL"
	case OpExpire:
		return "EXPIRE"
	}
	return "UNKNOWN"
}

// Command is one state machine input. Key, Value and Fence's node id may
// alias a request buffer that is reused once Apply returns; the machine
// copies what it keeps, and the Changes it returns do not alias them.
type Command struct {
	Op    Op
	Key   []byte
	Value []byte // OpSet: the new value; OpVDel: the value to compare
	Cond  Condition
	// Time is the proposer's physical clock in milliseconds. Keys whose
	// deadline is at or before Time are treated as missing.
	Time int64
	// ExpiresAt is the absolute deadline in milliseconds that an OpSet
	// gives the key; 0 means the key does not expire.
	ExpiresAt int64
	// Version is the version this command gives to what it changes.
	Version hlc.Timestamp
	// Fence is the request's fencing token, when HasFence is set.
	Fence    hlc.Timestamp
	HasFence bool
	// Volatile marks an OpSet whose key need not survive a restart.
	Volatile bool
}

// Condition is the condition a SET is applied under.
type Condition uint8

// The SET conditions.
const (
	// Always sets unconditionally.
	Always Condition = iota
	// IfMissing (NX) sets only when the key does not exist.
	IfMissing
	// IfMissingOrEqual (NEX) sets only when the key does not exist or
	// already holds the new value.
	IfMissingOrEqual
)

// The reasons a command is refused (Outcome Refused).
var (
	// ErrFencingRequired: the key is protected by a fencing token and
	// the command carries none.
	ErrFencingRequired = errors.New("store: a fencing token is required")
	// ErrFencingLower: the command's fencing token is older than the
	// key's.
	ErrFencingLower = errors.New("store: the fencing token is older than the key's")
	// ErrUnknownOp: the command's Op is not one the machine knows.
	ErrUnknownOp = errors.New("store: unknown operation")
)

// Outcome says what a command did.
type Outcome uint8

// The outcomes of Apply.
const (
	// Applied: a SET stored its value, a DEL or VDEL deleted the key, an
	// expiry removed it.
	Applied Outcome = iota + 1
	// NotMet: a SET's NX or NEX condition or a VDEL's value did not match.
	NotMet
	// Missing: the key did not exist.
	Missing
	// Refused: the command broke a fencing rule; Result.Err says which.
	Refused
)

// Result is the answer to a command.
type Result struct {
	Outcome Outcome
	// Version is the version to report: the new version of an applied SET,
	// the stored version when a condition was not met, the version of the
	// deleted value of a DEL or VDEL. It is zero when there is none.
	Version hlc.Timestamp
	// Err is set when Outcome is Refused: ErrFencingRequired,
	// ErrFencingLower or ErrUnknownOp.
	Err error
}

// Change is one change of a key: what watchers hear of and what a journal
// records. It describes the key's whole state after the change, so that
// replaying changes needs no knowledge of the commands that caused them.
type Change struct {
	// Seq numbers the changes of a machine: every change gets the next
	// number, and a key remembers the number of its last change.
	Seq     uint64
	Key     string
	Deleted bool
	// Version is the version of the change: the new value's version, or
	// the version the deletion was given.
	Version hlc.Timestamp

	// The key's state after a change that did not delete it. Value must
	// not be modified.
	Value     []byte
	Fence     hlc.Timestamp
	Fenced    bool
	ExpiresAt int64
	Volatile  bool

	// WasDurable reports that the key held a value that must survive a
	// restart before this change.
	WasDurable bool
}
