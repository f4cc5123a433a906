// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2023 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// Inflight is a map of InflightMessage keyed on packet id.
//
// dss: the map holds pointers to packets that the Inflight recycles. A
// map of packets by value allocated every packet anew (a packet is about
// 800 bytes, so the map stores it out of line), one per QoS 1 message.
//
// dss: the packet ids of the server's messages and of the client's are
// independent [MQTT-2.2.1]: an entry is keyed by its id and its direction
// (see inflightKey). Keyed by id alone, a client's QoS 1 or 2 publish
// whose id the server used for a message of its own deleted the server's
// message, and SUBSCRIBE and UNSUBSCRIBE with that id were refused.
// Has, Get and Delete look up the server's messages (PUBLISH, PUBREL);
// HasInbound, GetInbound and DeleteInbound the client's (the PUBACK,
// PUBREC or PUBCOMP the server keeps for them).
type Inflight struct {
	sync.RWMutex
	internal            map[uint32]*inflightEntry // internal contains the inflight packets, by inflightKey
	spare               []*inflightEntry          // emptied entries for reuse, the last emptied last; guarded by the mutex
	receiveQuota        int32                     // remaining inbound qos quota for flow control
	sendQuota           int32                     // remaining outbound qos quota for flow control
	maximumReceiveQuota int32                     // maximum allowed receive quota
	maximumSendQuota    int32                     // maximum allowed send quota
	// parked counts the packets waiting for send quota (Expiry < 0);
	// changed under the mutex, read without it (dss: every delivery
	// asks, see holdDelivery).
	parked atomic.Int32

	// dss: the order of the entries and the memory of the server's
	// messages (see queues.go); guarded by the mutex.
	next        uint64       // the order of the next new entry
	unsent      inflightList // the entries never written: queued for the session, or parked; oldest first
	bytes       int64        // the memory of the server's messages held (heldBytes)
	unsentBytes int64        // the part of bytes in unsent
	queues      *Queues      // the server's account of queued memory; nil: none
	offline     bool         // bytes count in queues: the session has no connection
	// detached is set once the session was resumed, taken over, ended
	// or expired: nothing of this Inflight counts in queues any more.
	detached bool
	// reserved is set while an entry whose memory queue reserved in
	// queues is added: its bytes are counted there already.
	reserved bool
}

// inflightEntry is an entry of an Inflight. dss: its order (seq) is the
// order of the messages to a session; upstream sorted them by their
// creation time in whole seconds, so messages queued within a second
// were sent in any order.
type inflightEntry struct {
	pk         packets.Packet
	seq        uint64 // the order of insertion; kept when the entry is updated
	size       int64  // what it counts in Inflight.bytes
	unsent     bool   // in Inflight.unsent
	prev, next *inflightEntry
}

// NewInflights returns a new instance of an Inflight packets map.
func NewInflights() *Inflight {
	return &Inflight{
		internal: map[uint32]*inflightEntry{},
	}
}

// inboundFlag marks the key of an entry of the client's packet id space.
const inboundFlag = 1 << 16

// inflightKey returns the key of the entry pk: its packet id, with
// inboundFlag for the acknowledgements the server keeps for the client's
// QoS 1 and 2 publishes (PUBACK, PUBREC, PUBCOMP). The server's own
// messages (PUBLISH, PUBREL) are keyed by their id alone.
func inflightKey(pk *packets.Packet) uint32 {
	switch pk.FixedHeader.Type {
	case packets.Puback, packets.Pubrec, packets.Pubcomp:
		return inboundFlag | uint32(pk.PacketID)
	}
	return uint32(pk.PacketID)
}

// maxSpare bounds how many emptied entries an Inflight keeps for reuse.
const maxSpare = 16

// Set adds or updates an inflight packet by packet id; it keeps a copy
// of m.
func (i *Inflight) Set(m *packets.Packet) bool {
	i.Lock()
	defer i.Unlock()
	return i.setLocked(m)
}

// setLocked is Set with the mutex held.
func (i *Inflight) setLocked(m *packets.Packet) bool {
	key := inflightKey(m)
	e, ok := i.internal[key]
	if ok && e.pk.Expiry < 0 {
		i.parked.Add(-1)
	}
	if m.Expiry < 0 {
		i.parked.Add(1)
	}
	if !ok {
		if n := len(i.spare); n > 0 {
			e, i.spare = i.spare[n-1], i.spare[:n-1]
		} else {
			e = new(inflightEntry)
		}
		e.seq = i.next
		i.next++
		i.internal[key] = e
	}
	m.Retain() // dss: before the release, in case both are the same owner's
	if ok {
		e.pk.Release()
	}
	e.pk = *m
	if e.unsent {
		i.adjustUnsent(-e.size)
	}
	size := heldBytes(m)
	i.account(size - e.size)
	e.size = size
	if unsent := m.Expiry < 0 || m.Queued; unsent != e.unsent {
		if unsent {
			i.unsent.insert(e)
		} else {
			i.unsent.remove(e)
		}
		e.unsent = unsent
	}
	if e.unsent {
		i.adjustUnsent(e.size)
	}
	return !ok
}

// Has reports whether a message of the server's with packet id id is in
// flight. dss: it spares the callers that only ask that the copy of the
// packet that Get makes.
func (i *Inflight) Has(id uint16) bool {
	return i.has(uint32(id))
}

// HasInbound reports whether the server holds an acknowledgement of the
// client's publish with packet id id (a QoS 2 publish not yet released).
func (i *Inflight) HasInbound(id uint16) bool {
	return i.has(inboundFlag | uint32(id))
}

func (i *Inflight) has(key uint32) bool {
	i.RLock()
	defer i.RUnlock()
	_, ok := i.internal[key]
	return ok
}

// Get returns the server's inflight message with packet id id.
func (i *Inflight) Get(id uint16) (packets.Packet, bool) {
	return i.get(uint32(id))
}

// GetInbound returns the acknowledgement the server holds for the
// client's publish with packet id id.
func (i *Inflight) GetInbound(id uint16) (packets.Packet, bool) {
	return i.get(inboundFlag | uint32(id))
}

func (i *Inflight) get(key uint32) (packets.Packet, bool) {
	i.RLock()
	defer i.RUnlock()

	if e, ok := i.internal[key]; ok {
		return e.pk, true
	}

	return packets.Packet{}, false
}

// Len returns the size of the inflight messages map.
func (i *Inflight) Len() int {
	i.RLock()
	defer i.RUnlock()
	return len(i.internal)
}

// outbound returns how many of the server's messages are in flight
// (not counting the acknowledgements held for the client's publishes).
func (i *Inflight) outbound() int {
	i.RLock()
	defer i.RUnlock()
	n := 0
	for key := range i.internal {
		if key&inboundFlag == 0 {
			n++
		}
	}
	return n
}

// Clone returns a new instance of Inflight with the same message data.
// This is used when transferring inflights from a taken-over session.
// dss: the clone keeps the order of the entries; it counts in the same
// Queues, as a session with a connection.
func (i *Inflight) Clone() *Inflight {
	c := NewInflights()
	c.queues = i.queues
	i.RLock()
	defer i.RUnlock()
	for k, v := range i.internal {
		e := &inflightEntry{pk: v.pk, seq: v.seq, size: v.size}
		e.pk.Retain() // dss: the original may be let go of without a release
		c.internal[k] = e
		c.bytes += e.size
		if v.unsent {
			c.unsent.insert(e)
			e.unsent = true
			c.unsentBytes += e.size
		}
	}
	c.parked.Store(i.parked.Load())
	c.next = i.next
	if c.queues != nil {
		c.queues.held.Add(c.unsentBytes) // dss: a session with a connection
	}
	return c
}

// GetAll returns all the inflight messages, in the order they were
// added (dss: upstream sorted them by the creation time's seconds).
func (i *Inflight) GetAll(immediate bool) []packets.Packet {
	i.RLock()
	defer i.RUnlock()

	entries := make([]*inflightEntry, 0, len(i.internal))
	for _, e := range i.internal {
		if !immediate || e.pk.Expiry < 0 {
			entries = append(entries, e)
		}
	}
	sort.Slice(entries, func(a, b int) bool { return entries[a].seq < entries[b].seq })

	m := make([]packets.Packet, len(entries))
	for n, e := range entries {
		m[n] = e.pk
	}
	return m
}

// expired returns the keys of the packets due to be dropped at now (see
// inflightExpired), nil if there are none.
func (i *Inflight) expired(now, maximumExpiry int64) []uint32 {
	i.RLock()
	defer i.RUnlock()
	var keys []uint32
	for key, e := range i.internal {
		if inflightExpired(&e.pk, now, maximumExpiry) {
			keys = append(keys, key)
		}
	}
	return keys
}

// HasParked reports whether packets wait for send quota. dss: it spares
// the read loop NextImmediate's packet-sized result after every packet.
func (i *Inflight) HasParked() bool {
	return i.parked.Load() > 0
}

// NextImmediate returns the next inflight packet which is indicated to be sent immediately.
// This typically occurs when the quota has been exhausted, and we need to wait until new quota
// is free to continue sending.
//
// dss: this took the read lock and then called GetAll, which takes it
// again: with a writer waiting in between, both waited forever. It also
// copied and sorted every inflight packet after every inbound packet; it
// now looks at the unsent packets only, oldest first, and only when
// packets are parked.
func (i *Inflight) NextImmediate() (packets.Packet, bool) {
	i.RLock()
	defer i.RUnlock()
	if i.parked.Load() == 0 {
		return packets.Packet{}, false
	}
	for e := i.unsent.head; e != nil; e = e.next {
		if e.pk.Expiry < 0 {
			return e.pk, true
		}
	}
	return packets.Packet{}, false
}

// Delete removes the server's in-flight message with packet id id.
// Returns true if the message existed.
func (i *Inflight) Delete(id uint16) bool {
	return i.delete(uint32(id))
}

// DeleteInbound removes the acknowledgement the server holds for the
// client's publish with packet id id. Returns true if it existed.
func (i *Inflight) DeleteInbound(id uint16) bool {
	return i.delete(inboundFlag | uint32(id))
}

// DeletePacket removes the entry of pk's direction and packet id.
func (i *Inflight) DeletePacket(pk *packets.Packet) bool {
	return i.delete(inflightKey(pk))
}

func (i *Inflight) delete(key uint32) bool {
	i.Lock()
	defer i.Unlock()

	e, ok := i.internal[key]
	if !ok {
		return false
	}
	i.deleteLocked(key, e)
	return true
}

// deleteLocked removes the entry e of key, with the mutex held.
func (i *Inflight) deleteLocked(key uint32, e *inflightEntry) {
	if e.pk.Expiry < 0 {
		i.parked.Add(-1)
	}
	delete(i.internal, key)
	if e.unsent {
		i.unsent.remove(e)
		e.unsent = false
		i.adjustUnsent(-e.size)
	}
	i.account(-e.size)
	e.size = 0
	e.pk.Release()
	// dss: the packet is not cleared (800 bytes written for every
	// acknowledgement): the next Set overwrites all of it. Until
	// then it holds on to what it referred to, memory of its owner's
	// (released above, and reused by it) or garbage.
	e.pk.Owner = nil
	if len(i.spare) < maxSpare {
		i.spare = append(i.spare, e)
	}
}

// TakeRecieveQuota reduces the receive quota by 1.
func (i *Inflight) DecreaseReceiveQuota() {
	if atomic.LoadInt32(&i.receiveQuota) > 0 {
		atomic.AddInt32(&i.receiveQuota, -1)
	}
}

// TakeRecieveQuota increases the receive quota by 1.
func (i *Inflight) IncreaseReceiveQuota() {
	if atomic.LoadInt32(&i.receiveQuota) < atomic.LoadInt32(&i.maximumReceiveQuota) {
		atomic.AddInt32(&i.receiveQuota, 1)
	}
}

// ResetReceiveQuota resets the receive quota to the maximum allowed value.
func (i *Inflight) ResetReceiveQuota(n int32) {
	atomic.StoreInt32(&i.receiveQuota, n)
	atomic.StoreInt32(&i.maximumReceiveQuota, n)
}

// DecreaseSendQuota reduces the send quota by 1.
func (i *Inflight) DecreaseSendQuota() {
	if atomic.LoadInt32(&i.sendQuota) > 0 {
		atomic.AddInt32(&i.sendQuota, -1)
	}
}

// IncreaseSendQuota increases the send quota by 1.
func (i *Inflight) IncreaseSendQuota() {
	if atomic.LoadInt32(&i.sendQuota) < atomic.LoadInt32(&i.maximumSendQuota) {
		atomic.AddInt32(&i.sendQuota, 1)
	}
}

// ResetSendQuota resets the send quota to the maximum allowed value.
func (i *Inflight) ResetSendQuota(n int32) {
	atomic.StoreInt32(&i.sendQuota, n)
	atomic.StoreInt32(&i.maximumSendQuota, n)
}
