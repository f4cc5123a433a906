package store

import (
	"bytes"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/proto"
)

// Machine is the state machine. The zero value is not usable; call New.
type Machine struct {
	// keys finds each key's record.
	keys index
	// fences holds the tokens of the keys flagged fenced.
	fences map[string]hlc.Timestamp
	// deadlines orders the keys flagged with a deadline; deadlineOf finds
	// a key's entry in it.
	deadlines  deadlineHeap
	deadlineOf map[string]*deadline
	// nodes interns the node ids of versions: a record holds an index.
	nodes     []string
	nodeIndex map[string]uint32
	// maxVersion is the highest version any applied command carried, so
	// that a clock restored from the machine never issues an older one.
	maxVersion hlc.Timestamp
	dataBytes  int64  // sum of key and value lengths
	seq        uint64 // Seq of the last change
}

// New returns an empty machine.
func New() *Machine {
	return &Machine{
		keys:       newIndex(),
		fences:     make(map[string]hlc.Timestamp),
		deadlineOf: make(map[string]*deadline),
		nodeIndex:  make(map[string]uint32),
	}
}

// Len returns the number of stored keys, including expired keys that no
// expiry command removed yet.
func (m *Machine) Len() int { return m.keys.len() }

// DataBytes returns the total length of the stored keys and values.
func (m *Machine) DataBytes() int64 { return m.dataBytes }

// MaxVersion returns the highest version any applied command carried.
func (m *Machine) MaxVersion() hlc.Timestamp { return m.maxVersion }

// Seq returns the number of the last change.
func (m *Machine) Seq() uint64 { return m.seq }

// node returns the index of a node id, interning it.
func (m *Machine) node(id string) uint32 {
	if i, ok := m.nodeIndex[id]; ok {
		return i
	}
	i := uint32(len(m.nodes))
	m.nodes = append(m.nodes, id)
	m.nodeIndex[id] = i
	return i
}

func (m *Machine) version(h recordHeader) hlc.Timestamp {
	return hlc.Timestamp{Wall: h.wall, Counter: h.counter, Node: m.nodes[h.node]}
}

// lookup returns the record of key and the key as the record holds it.
func (m *Machine) lookup(key []byte) (record, string, bool) {
	r, ok := m.keys.get(key)
	if !ok {
		return "", "", false
	}
	return r, r.key(), true
}

// expiredAt reports whether the key of r, whose stored key is key, is past
// its deadline at now.
func (m *Machine) expiredAt(r record, key string, now int64) bool {
	if r.flags()&flagDeadline == 0 {
		return false
	}
	return m.deadlineOf[key].at <= now
}

// Get returns the value and version of key as a reader at time now sees it.
// The value must not be modified.
func (m *Machine) Get(key []byte, now int64) (value []byte, version hlc.Timestamp, ok bool) {
	r, k, found := m.lookup(key)
	if !found || m.expiredAt(r, k, now) {
		return nil, hlc.Timestamp{}, false
	}
	return r.value(), m.version(r.header()), true
}

// Expired reports whether key is stored but past its deadline at now, so
// that a proposer can expire it before it proposes another command on it.
func (m *Machine) Expired(key []byte, now int64) bool {
	r, k, found := m.lookup(key)
	return found && m.expiredAt(r, k, now)
}

// Apply applies c and appends the changes it made to changes.
func (m *Machine) Apply(c *Command, changes []Change) (Result, []Change) {
	if m.maxVersion.Before(c.Version) {
		m.maxVersion = c.Version
	}
	r, key, found := m.lookup(c.Key)
	if found && m.expiredAt(r, key, c.Time) {
		// The key is gone from the moment of its deadline: remove it as an
		// expiry would, before the command sees the keyspace.
		changes = append(changes, m.remove(r, key, c.Version))
		found = false
	}
	switch c.Op {
	case OpSet:
		return m.set(c, r, key, found, changes)
	case OpDel, OpVDel:
		return m.del(c, r, key, found, changes)
	case OpExpire:
		// A live key is not expired: its deadline moved or went away.
		if !found {
			return Result{Outcome: Missing}, changes
		}
		return Result{Outcome: NotMet, Version: m.version(r.header())}, changes
	}
	return Result{Outcome: Refused, Err: proto.ErrUnknownCommand}, changes
}

func (m *Machine) set(c *Command, r record, key string, found bool, changes []Change) (Result, []Change) {
	var fence hlc.Timestamp
	fenced, wasDurable := false, false
	if found {
		h := r.header()
		if err := m.checkFence(c, r, key); err != nil {
			return Result{Outcome: Refused, Err: err}, changes
		}
		switch c.Cond {
		case proto.IfMissing:
			return Result{Outcome: NotMet, Version: m.version(h)}, changes
		case proto.IfMissingOrEqual:
			if !bytes.Equal(r.value(), c.Value) {
				return Result{Outcome: NotMet, Version: m.version(h)}, changes
			}
		}
		fence, fenced = m.fences[key]
		wasDurable = h.flags&flagVolatile == 0
		m.dataBytes -= int64(len(key) + len(r.value()))
	}
	if c.HasFence && (!fenced || fence.Before(c.Fence)) {
		fence, fenced = c.Fence, true
	}
	m.seq++
	h := recordHeader{wall: c.Version.Wall, counter: c.Version.Counter, seq: m.seq, node: m.node(c.Version.Node)}
	if fenced {
		h.flags |= flagFenced
	}
	if c.Volatile {
		h.flags |= flagVolatile
	}
	if c.ExpiresAt != 0 {
		h.flags |= flagDeadline
	}
	nr, nkey := makeRecord(h, string(c.Key), c.Value)
	m.store(nkey, nr, fence, c.ExpiresAt)
	value := nr.value()
	changes = append(changes, Change{
		Seq: m.seq, Key: nkey, Version: c.Version, Value: value,
		Fence: fence, Fenced: fenced, ExpiresAt: c.ExpiresAt, Volatile: c.Volatile,
		WasDurable: wasDurable,
	})
	return Result{Outcome: Applied, Version: c.Version}, changes
}

// store puts a new record for key in place, with its side tables. The
// maps take nkey as their key, so no old record stays referenced.
func (m *Machine) store(nkey string, nr record, fence hlc.Timestamp, expiresAt int64) {
	m.keys.put(nr)
	m.dataBytes += int64(len(nkey) + len(nr.value()))
	if nr.flags()&flagFenced != 0 {
		m.fences[nkey] = fence
	} else {
		delete(m.fences, nkey)
	}
	m.setDeadline(nkey, expiresAt)
}

func (m *Machine) del(c *Command, r record, key string, found bool, changes []Change) (Result, []Change) {
	if !found {
		return Result{Outcome: Missing}, changes
	}
	if err := m.checkFence(c, r, key); err != nil {
		return Result{Outcome: Refused, Err: err}, changes
	}
	h := r.header()
	if c.Op == OpVDel && !bytes.Equal(r.value(), c.Value) {
		return Result{Outcome: NotMet, Version: m.version(h)}, changes
	}
	changes = append(changes, m.remove(r, key, c.Version))
	return Result{Outcome: Applied, Version: m.version(h)}, changes
}

// checkFence applies the fencing rules to a command on the live record r.
func (m *Machine) checkFence(c *Command, r record, key string) *proto.Error {
	if r.flags()&flagFenced == 0 {
		return nil
	}
	switch {
	case !c.HasFence:
		return proto.ErrFencingRequired
	case c.Fence.Before(m.fences[key]):
		return proto.ErrFencingLower
	}
	return nil
}

// remove deletes key and returns the change, numbered, with version as the
// version of the deletion.
func (m *Machine) remove(r record, key string, version hlc.Timestamp) Change {
	m.drop(r, key)
	m.seq++
	return Change{Seq: m.seq, Key: key, Deleted: true, Version: version, WasDurable: r.flags()&flagVolatile == 0}
}

// drop deletes key, whose record is r, with its side tables.
func (m *Machine) drop(r record, key string) {
	m.keys.delete(key)
	delete(m.fences, key)
	m.setDeadline(key, 0)
	m.dataBytes -= int64(len(key) + len(r.value()))
}

// setDeadline gives key a deadline (0: none).
func (m *Machine) setDeadline(key string, at int64) {
	d := m.deadlineOf[key]
	switch {
	case at == 0 && d != nil:
		m.deadlines.remove(d.index)
		delete(m.deadlineOf, key)
	case at != 0 && d != nil:
		d.key, d.at = key, at
		m.deadlineOf[key] = d // take the new record's key string
		m.deadlines.fix(d.index)
	case at != 0:
		d = &deadline{key: key, at: at}
		m.deadlineOf[key] = d
		m.deadlines.push(d)
	}
}

// NextDeadline returns the earliest expiry deadline of any stored key.
func (m *Machine) NextDeadline() (int64, bool) {
	if len(m.deadlines) == 0 {
		return 0, false
	}
	return m.deadlines[0].at, true
}

// AppendExpired appends to keys up to limit keys whose deadline is at or
// before now, so that a proposer can expire them.
func (m *Machine) AppendExpired(keys []string, now int64, limit int) []string {
	// Walk the heap as a tree: a node's children expire no earlier than it.
	stack := []int{0}
	for len(stack) > 0 && limit > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(m.deadlines) || m.deadlines[i].at > now {
			continue
		}
		keys = append(keys, m.deadlines[i].key)
		limit--
		stack = append(stack, 2*i+2, 2*i+1)
	}
	return keys
}
