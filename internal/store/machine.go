package store

import (
	"bytes"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/proto"
)

// entry is one stored key.
type entry struct {
	key       string
	value     []byte // never modified after it is stored
	version   hlc.Timestamp
	fence     hlc.Timestamp
	fenced    bool
	volatile  bool
	expiresAt int64  // 0: no deadline
	seq       uint64 // Seq of the key's last change
	heapIndex int    // position in Machine.deadlines; -1 when not there
}

func (e *entry) expiredAt(now int64) bool { return e.expiresAt != 0 && e.expiresAt <= now }

// Machine is the state machine. The zero value is not usable; call New.
type Machine struct {
	keys      map[string]*entry
	deadlines deadlineHeap
	// maxVersion is the highest version any applied command carried, so
	// that a clock restored from the machine never issues an older one.
	maxVersion hlc.Timestamp
	dataBytes  int64  // sum of key and value lengths
	seq        uint64 // Seq of the last change
}

// New returns an empty machine.
func New() *Machine {
	return &Machine{keys: make(map[string]*entry)}
}

// Len returns the number of stored keys, including expired keys that no
// expiry command removed yet.
func (m *Machine) Len() int { return len(m.keys) }

// DataBytes returns the total length of the stored keys and values.
func (m *Machine) DataBytes() int64 { return m.dataBytes }

// MaxVersion returns the highest version any applied command carried.
func (m *Machine) MaxVersion() hlc.Timestamp { return m.maxVersion }

// Seq returns the number of the last change.
func (m *Machine) Seq() uint64 { return m.seq }

// Get returns the value and version of key as a reader at time now sees it.
// The value must not be modified.
func (m *Machine) Get(key []byte, now int64) (value []byte, version hlc.Timestamp, ok bool) {
	e := m.keys[string(key)]
	if e == nil || e.expiredAt(now) {
		return nil, hlc.Timestamp{}, false
	}
	return e.value, e.version, true
}

// Expired reports whether key is stored but past its deadline at now, so
// that a proposer can expire it before it proposes another command on it.
func (m *Machine) Expired(key []byte, now int64) bool {
	e := m.keys[string(key)]
	return e != nil && e.expiredAt(now)
}

// Apply applies c and appends the changes it made to changes.
func (m *Machine) Apply(c *Command, changes []Change) (Result, []Change) {
	if m.maxVersion.Before(c.Version) {
		m.maxVersion = c.Version
	}
	e := m.keys[string(c.Key)]
	if e != nil && e.expiredAt(c.Time) {
		// The key is gone from the moment of its deadline: remove it as an
		// expiry would, before the command sees the keyspace.
		m.remove(e)
		changes = append(changes, m.deletion(e, c.Version))
		e = nil
	}
	switch c.Op {
	case OpSet:
		return m.set(c, e, changes)
	case OpDel, OpVDel:
		return m.del(c, e, changes)
	case OpExpire:
		// A live key is not expired: its deadline moved or went away.
		if e == nil {
			return Result{Outcome: Missing}, changes
		}
		return Result{Outcome: NotMet, Version: e.version}, changes
	}
	return Result{Outcome: Refused, Err: proto.ErrUnknownCommand}, changes
}

func (m *Machine) set(c *Command, e *entry, changes []Change) (Result, []Change) {
	if e != nil {
		if err := checkFence(c, e); err != nil {
			return Result{Outcome: Refused, Err: err}, changes
		}
		switch c.Cond {
		case proto.IfMissing:
			return Result{Outcome: NotMet, Version: e.version}, changes
		case proto.IfMissingOrEqual:
			if !bytes.Equal(e.value, c.Value) {
				return Result{Outcome: NotMet, Version: e.version}, changes
			}
		}
	}
	wasDurable := e != nil && !e.volatile
	if e == nil {
		e = &entry{key: string(c.Key), heapIndex: -1}
		m.keys[e.key] = e
		m.dataBytes += int64(len(e.key))
	}
	m.dataBytes += int64(len(c.Value) - len(e.value))
	if bytes.Equal(e.value, c.Value) && e.value != nil {
		// Keep the stored copy: a renewal (NEX) rewrites the same value.
	} else {
		e.value = append(make([]byte, 0, len(c.Value)), c.Value...)
	}
	e.version = c.Version
	e.volatile = c.Volatile
	if c.HasFence && (!e.fenced || e.fence.Before(c.Fence)) {
		e.fence, e.fenced = c.Fence, true
	}
	m.setDeadline(e, c.ExpiresAt)
	m.seq++
	e.seq = m.seq
	changes = append(changes, Change{
		Seq: m.seq, Key: e.key, Version: c.Version, Value: e.value,
		Fence: e.fence, Fenced: e.fenced, ExpiresAt: e.expiresAt, Volatile: e.volatile,
		WasDurable: wasDurable,
	})
	return Result{Outcome: Applied, Version: c.Version}, changes
}

// deletion numbers and describes the removal of e.
func (m *Machine) deletion(e *entry, version hlc.Timestamp) Change {
	m.seq++
	return Change{Seq: m.seq, Key: e.key, Deleted: true, Version: version, WasDurable: !e.volatile}
}

func (m *Machine) del(c *Command, e *entry, changes []Change) (Result, []Change) {
	if e == nil {
		return Result{Outcome: Missing}, changes
	}
	if err := checkFence(c, e); err != nil {
		return Result{Outcome: Refused, Err: err}, changes
	}
	if c.Op == OpVDel && !bytes.Equal(e.value, c.Value) {
		return Result{Outcome: NotMet, Version: e.version}, changes
	}
	m.remove(e)
	changes = append(changes, m.deletion(e, c.Version))
	return Result{Outcome: Applied, Version: e.version}, changes
}

// checkFence applies the fencing rules to a command on the live entry e.
func checkFence(c *Command, e *entry) *proto.Error {
	switch {
	case !e.fenced:
		return nil
	case !c.HasFence:
		return proto.ErrFencingRequired
	case c.Fence.Before(e.fence):
		return proto.ErrFencingLower
	}
	return nil
}

func (m *Machine) remove(e *entry) {
	delete(m.keys, e.key)
	m.dataBytes -= int64(len(e.key) + len(e.value))
	m.setDeadline(e, 0)
}

func (m *Machine) setDeadline(e *entry, at int64) {
	e.expiresAt = at
	switch {
	case at == 0 && e.heapIndex >= 0:
		m.deadlines.remove(e.heapIndex)
	case at != 0 && e.heapIndex >= 0:
		m.deadlines.fix(e.heapIndex)
	case at != 0:
		m.deadlines.push(e)
	}
}

// NextDeadline returns the earliest expiry deadline of any stored key.
func (m *Machine) NextDeadline() (int64, bool) {
	if len(m.deadlines) == 0 {
		return 0, false
	}
	return m.deadlines[0].expiresAt, true
}

// AppendExpired appends to keys up to limit keys whose deadline is at or
// before now, so that a proposer can expire them.
func (m *Machine) AppendExpired(keys []string, now int64, limit int) []string {
	// Walk the heap as a tree: a node's children expire no earlier than it.
	stack := []int{0}
	for len(stack) > 0 && limit > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(m.deadlines) || m.deadlines[i].expiresAt > now {
			continue
		}
		keys = append(keys, m.deadlines[i].key)
		limit--
		stack = append(stack, 2*i+2, 2*i+1)
	}
	return keys
}
