// SPDX-License-Identifier: MIT

package mqtt

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: retained messages are bounded in number (Options.MaxRetained) and
// memory (Options.MaxRetainedBytes): a client's message that would be
// retained past a bound is refused (PUBACK or PUBREC 0x97 for QoS 1 and
// 2 of MQTT 5; a QoS 0 message is dropped; an MQTT 3.1.1 client is
// disconnected), counted in Faults.RefusedRetained, and neither retained
// nor routed. A message that replaces one retained on its topic counts
// only for its growth; one that deletes a retained message (an empty
// payload) is always taken. Upstream took any number: 139,154 retained
// messages of 1 KiB held 816 MB.
//
// Retained messages expire by a heap of their deadlines, looked at every
// second up to the first not due; upstream copied every retained message
// every second to find the expired ones (800 bytes each).

// retainedAccount counts the retained messages' memory and orders them by
// deadline. It is guarded by the index's root lock, but for bytes, which
// is read without it.
type retainedAccount struct {
	count     atomic.Int64 // the clients' retained messages
	bytes     atomic.Int64 // their memory
	deadlines deadlineHeap
	at        map[string]*deadlineEntry // the heap's entry of a topic
	// maxExpiry reads Capabilities.MaximumMessageExpiryInterval: a
	// message older than that goes whatever its own expiry. Set once;
	// nil for none.
	maxExpiry func() int64

	// seq numbers the messages retained, and seqOf says which number the
	// message retained on each topic has: a new subscription is sent the
	// retained messages numbered up to what seq was when it was made,
	// and never one retained since, which reached it as it was published.
	// Written under the root lock with seqMu held; read with seqMu.
	seqMu sync.RWMutex
	seq   uint64
	seqOf map[string]uint64
}

// retainedOverhead is what a retained message costs beside the bytes its
// packet refers to: the packet kept in the map of retained messages, its
// map entry, its deadline, and a node of the index.
const retainedOverhead = int64(unsafe.Sizeof(packets.Packet{})+unsafe.Sizeof(deadlineEntry{})+unsafe.Sizeof(particle{})) + 96

// retainedBytes is the memory a retained message pk counts for.
func retainedBytes(pk *packets.Packet) int64 {
	p := &pk.Properties
	n := len(pk.Payload) + len(pk.TopicName) + len(p.CorrelationData) + len(p.ContentType) + len(p.ResponseTopic)
	for _, u := range p.User {
		n += int(unsafe.Sizeof(u)) + len(u.Key) + len(u.Val)
	}
	return int64(n) + retainedOverhead
}

// RetainedBytes returns the memory the retained messages count for.
func (x *TopicsIndex) RetainedBytes() int64 { return x.retained.bytes.Load() }

// RetainedCount returns the number of retained messages.
func (x *TopicsIndex) RetainedCount() int { return int(x.retained.count.Load()) }

// RetainMessage saves a message payload to the end of a topic address. Returns
// 1 if a retained message was added, and -1 if the retained message was removed.
// 0 is returned if sequential empty payloads are received.
func (x *TopicsIndex) RetainMessage(pk packets.Packet) int64 {
	r, _ := x.retainWithin(&pk, 0, 0)
	return r
}

// retainWithin is RetainMessage for a message that may not make the
// retained messages more than maxCount or maxBytes (0: no bound); it
// reports false, and changes nothing, for one that would.
func (x *TopicsIndex) retainWithin(pk *packets.Packet, maxCount int, maxBytes int64) (int64, bool) {
	x.root.Lock()
	defer x.root.Unlock()

	old, existed := x.Retained.Get(pk.TopicName)
	var oldSize int64
	if existed {
		oldSize = retainedBytes(&old)
	}
	if len(pk.Payload) > 0 {
		size := retainedBytes(pk)
		if maxCount > 0 && !existed && x.retained.count.Load() >= int64(maxCount) {
			return 0, false
		}
		if maxBytes > 0 && size > oldSize && x.retained.bytes.Load()+size-oldSize > maxBytes {
			return 0, false
		}
		n := x.set(pk.TopicName, 0)
		n.Lock()
		n.retainPath = pk.TopicName
		n.Unlock()
		x.retained.seqMu.Lock()
		x.Retained.Add(pk.TopicName, *pk)
		x.retained.seq++
		if x.retained.seqOf == nil {
			x.retained.seqOf = make(map[string]uint64)
		}
		x.retained.seqOf[pk.TopicName] = x.retained.seq
		x.retained.seqMu.Unlock()
		if !existed {
			x.retained.count.Add(1)
		}
		x.retained.bytes.Add(size - oldSize)
		x.retained.setDeadline(pk)
		return 1, true
	}

	var out int64
	if existed && len(old.Payload) > 0 && old.FixedHeader.Retain {
		out = -1 // if a retained packet existed, return -1
	}
	x.deleteRetainedLocked(pk.TopicName, existed, oldSize) // [MQTT-3.3.1-6] [MQTT-3.3.1-7]
	return out, true
}

// deleteRetainedLocked removes the retained message of topic, whose
// memory was size, and the levels of the index only it held. The root
// lock is held.
func (x *TopicsIndex) deleteRetainedLocked(topic string, existed bool, size int64) {
	if n := x.seek(topic, 0); n != nil {
		n.Lock()
		n.retainPath = ""
		n.Unlock()
		x.trim(n)
	}
	if !existed {
		return
	}
	x.retained.seqMu.Lock()
	x.Retained.Delete(topic)
	delete(x.retained.seqOf, topic)
	x.retained.seqMu.Unlock()
	x.retained.count.Add(-1)
	x.retained.bytes.Add(-size)
	x.retained.dropDeadline(topic)
}

// retainedMark returns the number of the message retained last: a
// subscription made now is sent the retained messages up to it.
func (x *TopicsIndex) retainedMark() uint64 {
	x.retained.seqMu.RLock()
	defer x.retained.seqMu.RUnlock()
	return x.retained.seq
}

// retainedAsOf returns the message retained on topic if it was retained
// by mark (retainedMark): one retained later reached the subscriptions
// of then as it was published.
func (x *TopicsIndex) retainedAsOf(topic string, mark uint64) (packets.Packet, bool) {
	x.retained.seqMu.RLock()
	defer x.retained.seqMu.RUnlock()
	if seq, ok := x.retained.seqOf[topic]; !ok || seq > mark {
		return packets.Packet{}, false
	}
	return x.Retained.Get(topic)
}

// expireRetained removes the retained messages due at now (Unix seconds).
func (x *TopicsIndex) expireRetained(now int64) {
	x.root.Lock()
	defer x.root.Unlock()
	h := &x.retained.deadlines
	for h.Len() > 0 && (*h)[0].deadline < now {
		e := heap.Pop(h).(*deadlineEntry)
		delete(x.retained.at, e.topic)
		if pk, ok := x.Retained.Get(e.topic); ok {
			x.deleteRetainedLocked(e.topic, true, retainedBytes(&pk))
		}
	}
}

// deadline returns when pk, retained, is to go: at its own expiry
// (MQTT 5) [MQTT-3.3.2-5] or at the server's maximum since it was made,
// whichever is sooner; 0 for never.
func (a *retainedAccount) deadline(pk *packets.Packet) int64 {
	var d int64
	if pk.ProtocolVersion == 5 && pk.Expiry > 0 {
		d = pk.Expiry
	}
	if a.maxExpiry == nil {
		return d
	}
	if max := a.maxExpiry(); max > 0 && (d == 0 || pk.Created+max < d) {
		d = pk.Created + max
	}
	return d
}

// setDeadline puts pk's topic in the heap at pk's deadline, or takes it
// out for a message that does not expire.
func (a *retainedAccount) setDeadline(pk *packets.Packet) {
	d := a.deadline(pk)
	e := a.at[pk.TopicName]
	switch {
	case d == 0 && e != nil:
		a.dropDeadline(pk.TopicName)
	case d == 0:
	case e != nil:
		e.deadline = d
		heap.Fix(&a.deadlines, e.index)
	default:
		if a.at == nil {
			a.at = map[string]*deadlineEntry{}
		}
		e = &deadlineEntry{topic: pk.TopicName, deadline: d}
		a.at[pk.TopicName] = e
		heap.Push(&a.deadlines, e)
	}
}

func (a *retainedAccount) dropDeadline(topic string) {
	if e := a.at[topic]; e != nil {
		heap.Remove(&a.deadlines, e.index)
		delete(a.at, topic)
	}
}

// deadlineEntry is a retained topic and when its message is to go.
type deadlineEntry struct {
	topic    string
	deadline int64
	index    int
}

// deadlineHeap orders retained topics by deadline (container/heap).
type deadlineHeap []*deadlineEntry

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *deadlineHeap) Push(x any) {
	e := x.(*deadlineEntry)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *deadlineHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
