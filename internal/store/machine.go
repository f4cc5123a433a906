package store

import (
	"bytes"
	"strings"
	"unsafe"

	"github.com/dssio/dss/hlc"
)

// Machine is the state machine. The zero value is not usable; call New.
type Machine struct {
	arena arena
	// keys finds each key's record in the arena.
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
	limits     Limits
	// scratch holds the keys of one segment for Scan.
	scratch []scanEntry
}

// New returns an empty machine whose index hashes keys under a random
// key.
func New() *Machine { return NewKeyed(RandomHashKey()) }

// NewKeyed returns an empty machine whose index hashes keys under k: the
// machines of the nodes of a cluster share k, so that a scan one of them
// began continues on another.
func NewKeyed(k HashKey) *Machine {
	return &Machine{
		keys:       newIndex(k),
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

// stored is a key as the machine holds it.
type stored struct {
	at  ref
	rec record
	key string // aliases the record
}

// lookup finds key.
func (m *Machine) lookup(key []byte) (stored, bool) {
	at, ok := m.keys.get(&m.arena, key)
	if !ok {
		return stored{}, false
	}
	r := m.arena.at(at)
	return stored{at: at, rec: r, key: r.key()}, true
}

// expiredAt reports whether s is past its deadline at now.
func (m *Machine) expiredAt(s stored, now int64) bool {
	if s.rec.flags()&flagDeadline == 0 {
		return false
	}
	return m.deadlineOf[s.key].at <= now
}

// Get returns the value and version of key as a reader at time now sees it.
// The value must not be modified.
func (m *Machine) Get(key []byte, now int64) (value []byte, version hlc.Timestamp, ok bool) {
	s, found := m.lookup(key)
	if !found || m.expiredAt(s, now) {
		return nil, hlc.Timestamp{}, false
	}
	return s.rec.value(), m.version(s.rec.header()), true
}

// Deadline returns the time (milliseconds since the epoch) at which key
// expires; ok is false when it has no deadline or does not exist.
func (m *Machine) Deadline(key []byte) (at int64, ok bool) {
	s, found := m.lookup(key)
	if !found || s.rec.flags()&flagDeadline == 0 {
		return 0, false
	}
	return m.deadlineOf[s.key].at, true
}

// Info is what KEYINFO reports of a key besides its value and version.
type Info struct {
	// Deadline is when the key expires (milliseconds since the Unix
	// epoch); 0 means never.
	Deadline int64
	// Fence is the fencing token that protects the key, when Fenced.
	Fence  hlc.Timestamp
	Fenced bool
}

// GetInfo is Get with the key's deadline and fencing token.
func (m *Machine) GetInfo(key []byte, now int64) (value []byte, version hlc.Timestamp, info Info, ok bool) {
	s, found := m.lookup(key)
	if !found || m.expiredAt(s, now) {
		return nil, hlc.Timestamp{}, Info{}, false
	}
	if s.rec.flags()&flagDeadline != 0 {
		info.Deadline = m.deadlineOf[s.key].at
	}
	if s.rec.flags()&flagFenced != 0 {
		info.Fence, info.Fenced = m.fences[s.key]
	}
	return s.rec.value(), m.version(s.rec.header()), info, true
}

// Lookup returns the value and version key holds, whether or not its
// deadline has passed. The value must not be modified.
func (m *Machine) Lookup(key []byte) (value []byte, version hlc.Timestamp, ok bool) {
	s, found := m.lookup(key)
	if !found {
		return nil, hlc.Timestamp{}, false
	}
	return s.rec.value(), m.version(s.rec.header()), true
}

// Expired reports whether key is stored but past its deadline at now, so
// that a proposer can expire it before it proposes another command on it.
func (m *Machine) Expired(key []byte, now int64) bool {
	if len(m.deadlineOf) == 0 {
		// No key has a deadline (every one that has is in deadlineOf):
		// a write to a store without expiring keys looks its key up once,
		// not twice.
		return false
	}
	s, found := m.lookup(key)
	return found && m.expiredAt(s, now)
}

// Apply applies c and appends the changes it made to changes.
func (m *Machine) Apply(c *Command, changes []Change) (Result, []Change) {
	if m.maxVersion.Before(c.Version) {
		m.maxVersion = c.Version
	}
	s, found := m.lookup(c.Key)
	if found && m.expiredAt(s, c.Time) {
		// The key is gone from the moment of its deadline: remove it as an
		// expiry would, before the command sees the keyspace.
		changes = append(changes, m.remove(s, c.Version))
		found = false
	}
	var res Result
	switch c.Op {
	case OpSet:
		res, changes = m.set(c, s, found, changes)
	case OpDel, OpVDel:
		res, changes = m.del(c, s, found, changes)
	case OpExpire:
		// A live key is not expired: its deadline moved or went away.
		res = Result{Outcome: Missing}
		if found {
			res = Result{Outcome: NotMet, Version: m.version(s.rec.header())}
		}
	default:
		res = Result{Outcome: Refused, Err: ErrUnknownOp}
	}
	m.compact()
	return res, changes
}

func (m *Machine) set(c *Command, s stored, found bool, changes []Change) (Result, []Change) {
	var fence hlc.Timestamp
	fenced, wasDurable := false, false
	if found {
		h := s.rec.header()
		if err := m.checkFence(c, s); err != nil {
			return Result{Outcome: Refused, Err: err}, changes
		}
		switch c.Cond {
		case IfMissing:
			return Result{Outcome: NotMet, Version: m.version(h)}, changes
		case IfMissingOrEqual:
			if !bytes.Equal(s.rec.value(), c.Value) {
				return Result{Outcome: NotMet, Version: m.version(h)}, changes
			}
		}
		fence, fenced = m.fences[s.key]
		wasDurable = h.flags&flagVolatile == 0
	}
	replaced := 0
	if found {
		replaced = len(s.key) + len(s.rec.value())
	}
	if !m.admits(len(c.Key), len(c.Value), found, replaced) {
		return Result{Outcome: Refused, Err: ErrQuotaExceeded}, changes
	}
	if c.HasFence && (!fenced || fence.Before(c.Fence)) {
		fence, fenced = ownFence(c.Fence, fence), true
	}
	m.seq++
	ch := Change{
		Seq: m.seq, Version: c.Version, Fence: fence, Fenced: fenced,
		ExpiresAt: c.ExpiresAt, Volatile: c.Volatile, WasDurable: wasDurable,
	}
	var old *stored
	if found {
		old = &s
	}
	// put keeps no reference to the key it is given (side tables clone
	// it), so the request's bytes can be lent without a copy.
	ch.Key, ch.Value = unsafe.String(unsafe.SliceData(c.Key), len(c.Key)), c.Value
	ns := m.put(old, &ch)
	ch.Key, ch.Value = ns.key, ns.rec.value()
	changes = append(changes, ch)
	return Result{Outcome: Applied, Version: c.Version}, changes
}

// ownFence returns token with a node id that does not alias the request
// it came in: cur's when they are the same (a lock holder renewing), a
// copy otherwise.
func ownFence(token, cur hlc.Timestamp) hlc.Timestamp {
	if token.Node == cur.Node {
		token.Node = cur.Node
	} else {
		token.Node = strings.Clone(token.Node)
	}
	return token
}

// put stores the state c describes for c.Key, in place of old if there is
// one, with its side tables.
func (m *Machine) put(old *stored, c *Change) stored {
	h := recordHeader{wall: c.Version.Wall, counter: c.Version.Counter, seq: c.Seq, node: m.node(c.Version.Node)}
	if c.Fenced {
		h.flags |= flagFenced
	}
	if c.Volatile {
		h.flags |= flagVolatile
	}
	if c.ExpiresAt != 0 {
		h.flags |= flagDeadline
	}
	at, b := m.arena.alloc(recordSize(h, len(c.Key), len(c.Value)))
	r := writeRecord(b, h, c.Key, c.Value)
	ns := stored{at: at, rec: r, key: r.key()}
	m.keys.put(&m.arena, ns.key, at)
	m.dataBytes += int64(len(c.Key) + len(c.Value))
	if old != nil {
		m.dataBytes -= int64(len(old.key) + len(old.rec.value()))
		m.arena.release(old.at, len(old.rec))
	}
	if c.Fenced {
		m.fences[m.sideKey(c.Key)] = c.Fence
	} else {
		delete(m.fences, c.Key)
	}
	m.setDeadline(c.Key, c.ExpiresAt)
	return ns
}

// sideKey returns key as the side tables may keep it: not aliasing a
// slab, which it would keep from being freed.
func (m *Machine) sideKey(key string) string {
	if d, ok := m.deadlineOf[key]; ok {
		return d.key
	}
	return strings.Clone(key)
}

func (m *Machine) del(c *Command, s stored, found bool, changes []Change) (Result, []Change) {
	if !found {
		return Result{Outcome: Missing}, changes
	}
	if err := m.checkFence(c, s); err != nil {
		return Result{Outcome: Refused, Err: err}, changes
	}
	h := s.rec.header()
	if c.Op == OpVDel && !bytes.Equal(s.rec.value(), c.Value) {
		return Result{Outcome: NotMet, Version: m.version(h)}, changes
	}
	changes = append(changes, m.remove(s, c.Version))
	return Result{Outcome: Applied, Version: m.version(h)}, changes
}

// checkFence applies the fencing rules to a command on the live key s.
func (m *Machine) checkFence(c *Command, s stored) error {
	if s.rec.flags()&flagFenced == 0 {
		return nil
	}
	switch {
	case !c.HasFence:
		return ErrFencingRequired
	case c.Fence.Before(m.fences[s.key]):
		return ErrFencingLower
	}
	return nil
}

// remove deletes the key s and returns the change, numbered, with version
// as the version of the deletion.
func (m *Machine) remove(s stored, version hlc.Timestamp) Change {
	m.drop(s)
	m.seq++
	return Change{Seq: m.seq, Key: s.key, Deleted: true, Version: version, WasDurable: s.rec.flags()&flagVolatile == 0}
}

// drop deletes the key s with its side tables.
func (m *Machine) drop(s stored) {
	m.keys.delete(&m.arena, s.key)
	delete(m.fences, s.key)
	m.setDeadline(s.key, 0)
	m.dataBytes -= int64(len(s.key) + len(s.rec.value()))
	m.arena.release(s.at, len(s.rec))
}

// setDeadline gives key a deadline (0: none).
func (m *Machine) setDeadline(key string, at int64) {
	d := m.deadlineOf[key]
	switch {
	case at == 0 && d != nil:
		m.deadlines.remove(d.index)
		delete(m.deadlineOf, key)
	case at != 0 && d != nil:
		d.at = at
		m.deadlines.fix(d.index)
	case at != 0:
		d = &deadline{key: m.sideKey(key), at: at}
		m.deadlineOf[d.key] = d
		m.deadlines.push(d)
	}
}

// compact moves a few live records out of a mostly empty slab when enough
// of the arena is garbage.
func (m *Machine) compact() {
	a := &m.arena
	if !a.compactOn {
		if !a.garbage() {
			return
		}
		id, ok := a.pickVictim()
		if !ok {
			return
		}
		a.victim, a.next, a.compactOn, a.retryAbove = id, 0, true, 0
	}
	// The victim's records, by value: alloc below may grow a.slabs.
	victim := a.slabs[a.victim].buf
	for moved, seen := 0, 0; moved < compactStep && seen < compactScan && a.compactOn; seen++ {
		if a.next >= len(victim) {
			// Every record in it is garbage or moved (then release has
			// dropped it already); a slab that still counts live bytes
			// here is kept, not lost.
			a.compactOn = false
			return
		}
		at := makeRef(a.victim, a.next)
		r := a.at(at)
		a.next += len(r)
		key := r.key()
		if !m.keys.holds(key, at) {
			continue // garbage
		}
		nat, b := a.alloc(len(r))
		copy(b, r)
		m.keys.put(a, key, nat)
		a.release(at, len(r))
		moved++
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
