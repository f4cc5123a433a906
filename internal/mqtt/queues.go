// SPDX-License-Identifier: MIT

package mqtt

import (
	"log/slog"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/time/rate"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: the memory of the messages queued for sessions without a
// connection is bounded, per session (Options.MaxSessionQueueBytes) and
// for all of them (Options.MaxQueuedBytes): the oldest queued messages
// are dropped to make room for a new one. Upstream bounded a session's
// messages by their number only (Capabilities.MaximumInflight): 980 MB of
// QoS 1 messages queued for one offline session took 4 GB.
//
// What counts is heldBytes of every message of the server's that a
// session holds (queued, parked for send quota, or sent and not yet
// acknowledged), kept in Inflight.bytes as the entries change; the
// sessions without a connection add theirs to Queues.bytes, from the end
// of their connection (goOffline) until they are resumed, taken over,
// ended or expired (detach). Only messages never sent are dropped: a
// message the client may have received keeps its packet id.
//
// The same bounds hold the messages a connected client cannot take yet
// (beyond its receive window, parked): they count in Queues.held while
// they wait, and the session bound counts all of the session's messages.
// Their publishers are slowed meanwhile (see backpressure.go), so that
// the bounds are reached only by a subscriber that stopped taking
// messages, or publishers that feed each other's subscribers.

// Queues accounts for the memory of the messages queued for sessions
// without a connection, and held for connected ones that cannot take
// them yet, and counts the messages dropped to bound it.
type Queues struct {
	bytes atomic.Int64 // heldBytes of the sessions without a connection
	// held is the heldBytes of the messages never sent of the sessions
	// with a connection (parked, or queued until its CONNACK).
	held atomic.Int64
	// DroppedSession and DroppedTotal count the queued messages dropped
	// for the bound of their session and for the bound of all sessions.
	DroppedSession atomic.Int64
	DroppedTotal   atomic.Int64

	maxSession, maxTotal int64 // 0: no bound
	log                  *slog.Logger
	logLimit             *rate.Limiter
	unlogged             atomic.Int64 // drops since the last line logged
	// last is the session of the last drop and its bound, for the line
	// that reports it.
	last atomic.Pointer[queueDropNote]
}

// queueDropNote is what a line about queued drops names.
type queueDropNote struct {
	client       string
	limit        queueLimit
	sessionBytes int64
}

// newQueues returns the account of the bounds in opts.
func newQueues(opts *Options, log *slog.Logger) *Queues {
	return &Queues{
		maxSession: max(opts.MaxSessionQueueBytes, 0),
		maxTotal:   max(opts.MaxQueuedBytes, 0),
		log:        log,
		logLimit:   rate.NewLimiter(rate.Every(time.Second), 1),
	}
}

// Bytes returns the memory held for the sessions without a connection.
func (q *Queues) Bytes() int64 { return q.bytes.Load() }

// Held returns the memory of the messages that connected clients cannot
// take yet.
func (q *Queues) Held() int64 { return q.held.Load() }

// entryOverhead is what an inflight entry costs beside the bytes its
// packet refers to: the entry itself and its slot in the map.
const entryOverhead = int64(unsafe.Sizeof(inflightEntry{})) + 16

// heldBytes is the memory a session's copy of the message pk holds: its
// payload, topic and properties and the entry that keeps it (routing
// gives every session a copy of the payload and properties of its own).
// Only the server's PUBLISH packets count.
func heldBytes(pk *packets.Packet) int64 {
	if pk.FixedHeader.Type != packets.Publish {
		return 0
	}
	p := &pk.Properties
	n := len(pk.Payload) + len(pk.TopicName) +
		len(p.CorrelationData) + len(p.AuthenticationData) + len(p.ContentType) + len(p.ResponseTopic) +
		len(p.AssignedClientID) + len(p.AuthenticationMethod) + len(p.ResponseInfo) + len(p.ServerReference) +
		len(p.ReasonString) + 8*len(p.SubscriptionIdentifier)
	for _, u := range p.User {
		n += int(unsafe.Sizeof(u)) + len(u.Key) + len(u.Val)
	}
	return int64(n) + entryOverhead
}

// account adds delta to the memory the Inflight holds, and to the
// queued memory while the session has no connection. The mutex is held.
func (i *Inflight) account(delta int64) {
	i.bytes += delta
	if i.offline && !i.reserved && delta != 0 {
		i.queues.bytes.Add(delta)
	}
}

// adjustUnsent adds delta to the memory of the messages never sent, and
// to the held memory while the session has a connection. The mutex is
// held.
func (i *Inflight) adjustUnsent(delta int64) {
	i.unsentBytes += delta
	if i.queues != nil && !i.offline && !i.detached && !i.reserved && delta != 0 {
		i.queues.held.Add(delta)
	}
}

// Bytes returns the memory of the server's messages the Inflight holds.
func (i *Inflight) Bytes() int64 {
	i.RLock()
	defer i.RUnlock()
	return i.bytes
}

// queueLimit names the bound a queued message was dropped for.
type queueLimit int

const (
	withinLimits queueLimit = iota
	sessionLimit
	totalLimit
)

func (l queueLimit) String() string {
	if l == totalLimit {
		return "total"
	}
	return "session"
}

// droppedMessage is a queued message dropped for a bound: one that was
// held (and is no longer), or the new one, refused.
type droppedMessage struct {
	pk    packets.Packet
	limit queueLimit
	held  bool
}

// queue adds m, a message never sent (queued for a session without a
// connection, or parked for a connected one), within the bounds of q: it
// drops the oldest messages never sent of this session to make room. It
// returns them, and the bound that refused m if even that could leave
// no room.
func (i *Inflight) queue(m *packets.Packet) (dropped []droppedMessage, refused queueLimit) {
	i.Lock()
	defer i.Unlock()
	q := i.queues
	if q == nil || i.detached {
		i.setLocked(m)
		return nil, withinLimits
	}
	need := heldBytes(m)
	if q.maxSession > 0 {
		if i.bytes-i.unsentBytes+need > q.maxSession {
			return nil, sessionLimit // what was sent cannot be dropped
		}
		for i.bytes+need > q.maxSession {
			dropped = append(dropped, i.dropOldestLocked(sessionLimit))
		}
	}
	if q.maxTotal > 0 {
		for !q.reserve(need, i.offline) {
			if i.unsentBytes == 0 {
				return dropped, totalLimit
			}
			dropped = append(dropped, i.dropOldestLocked(totalLimit))
		}
		// The reservation counted m in queues already.
		i.reserved = true
		i.setLocked(m)
		i.reserved = false
	} else {
		i.setLocked(m)
	}
	return dropped, withinLimits
}

// reserve adds n to the memory of the sessions without a connection
// (offline) or to the held memory unless the two together pass the
// total bound.
func (q *Queues) reserve(n int64, offline bool) bool {
	counter := &q.held
	if offline {
		counter = &q.bytes
	}
	for {
		cur := counter.Load()
		if q.bytes.Load()+q.held.Load()+n > q.maxTotal {
			return false
		}
		if counter.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// dropOldest drops the oldest message never sent of the session, for
// limit, and reports whether there was one.
func (i *Inflight) dropOldest(limit queueLimit) (droppedMessage, bool) {
	i.Lock()
	defer i.Unlock()
	if i.unsentBytes == 0 {
		return droppedMessage{}, false
	}
	return i.dropOldestLocked(limit), true
}

// dropOldestLocked drops the oldest message never sent, for limit. The
// mutex is held, and there is one (i.unsentBytes > 0).
func (i *Inflight) dropOldestLocked(limit queueLimit) droppedMessage {
	e := i.unsent.head
	for e.size == 0 {
		e = e.next
	}
	d := droppedMessage{pk: e.pk, limit: limit, held: true}
	d.pk.Owner = nil // released below; the copy is for the logs
	i.deleteLocked(inflightKey(&e.pk), e)
	return d
}

// goOffline counts the session's messages as queued: its connection has
// ended and the session stays. It drops the oldest messages never sent
// while the session or the total is past its bound.
func (i *Inflight) goOffline() (dropped []droppedMessage) {
	i.Lock()
	defer i.Unlock()
	q := i.queues
	if q == nil || i.offline || i.detached {
		return nil
	}
	for q.maxSession > 0 && i.bytes > q.maxSession && i.unsentBytes > 0 {
		dropped = append(dropped, i.dropOldestLocked(sessionLimit))
	}
	q.held.Add(-i.unsentBytes) // they count whole now
	i.offline = true
	q.bytes.Add(i.bytes)
	for q.maxTotal > 0 && q.bytes.Load() > q.maxTotal && i.unsentBytes > 0 {
		dropped = append(dropped, i.dropOldestLocked(totalLimit))
	}
	return dropped
}

// detach takes the session's messages out of the queued memory: the
// session was resumed by a new connection, taken over, ended or expired.
// What is added to this Inflight later no longer counts there.
func (i *Inflight) detach() {
	i.Lock()
	defer i.Unlock()
	switch {
	case i.queues == nil || i.detached:
	case i.offline:
		i.queues.bytes.Add(-i.bytes)
		i.offline = false
	default:
		i.queues.held.Add(-i.unsentBytes)
	}
	i.detached = true
}

// queueDelivered counts and logs what queueing out dropped (out itself if
// refused) and reports whether out was queued.
func (s *Server) queueDelivered(cl *Client, out *packets.Packet, dropped []droppedMessage, refused queueLimit) bool {
	if refused != withinLimits {
		d := droppedMessage{pk: *out, limit: refused}
		d.pk.Owner = nil
		dropped = append(dropped, d)
	}
	s.queuedDropped(cl, dropped)
	return refused == withinLimits
}

// queuedDropped counts and logs the messages dropped from cl's queue.
func (s *Server) queuedDropped(cl *Client, dropped []droppedMessage) {
	if len(dropped) == 0 {
		return
	}
	q := s.Queues
	for n := range dropped {
		d := &dropped[n]
		if d.limit == totalLimit {
			q.DroppedTotal.Add(1)
		} else {
			q.DroppedSession.Add(1)
		}
		if d.held {
			atomic.AddInt64(&s.Info.Inflight, -1)
			if d.pk.Expiry >= 0 {
				cl.State.Inflight.IncreaseSendQuota() // a queued message took it
			}
		}
	}
	q.unlogged.Add(int64(len(dropped)))
	q.last.Store(&queueDropNote{client: cl.ID, limit: dropped[len(dropped)-1].limit, sessionBytes: cl.State.Inflight.Bytes()})
	if q.logLimit.Allow() {
		q.logDrops()
	}
}

// logDrops logs the drops since the last line, naming the session of the
// last one.
func (q *Queues) logDrops() {
	n := q.unlogged.Swap(0)
	if n == 0 {
		return
	}
	last := q.last.Load()
	q.log.Warn("queued messages dropped at their bound",
		"client", last.client, "limit", last.limit.String(), "dropped", n,
		"session_bytes", last.sessionBytes, "queued_bytes", q.Bytes(), "held_bytes", q.Held())
}

// flushLog logs the drops no line reported yet, once a line is allowed.
func (q *Queues) flushLog() {
	if q.unlogged.Load() > 0 && q.logLimit.Allow() {
		q.logDrops()
	}
}

// inflightList is a list of inflight entries in the order of their seq.
type inflightList struct{ head, tail *inflightEntry }

// insert adds e in its place, which is nearly always the end.
func (l *inflightList) insert(e *inflightEntry) {
	after := l.tail
	for after != nil && after.seq > e.seq {
		after = after.prev
	}
	e.prev = after
	if after == nil {
		e.next = l.head
		l.head = e
	} else {
		e.next = after.next
		after.next = e
	}
	if e.next == nil {
		l.tail = e
	} else {
		e.next.prev = e
	}
}

// remove takes e out of the list.
func (l *inflightList) remove(e *inflightEntry) {
	if e.prev == nil {
		l.head = e.next
	} else {
		e.prev.next = e.next
	}
	if e.next == nil {
		l.tail = e.prev
	} else {
		e.next.prev = e.prev
	}
	e.prev, e.next = nil, nil
}
