// SPDX-License-Identifier: MIT

package mqtt

import (
	"sync"
	"sync/atomic"
	"time"
)

// dss: a QoS 1 or 2 message for a connected subscriber that cannot take
// it yet (its receive window is full of messages it has not
// acknowledged) is held in its session, parked, within the bounds of
// queued memory (queues.go), and the publisher that routed it is slowed:
// its connection is not read until the subscriber has taken what was
// parked for it, so that TCP back-pressure slows the publisher instead of
// the server acknowledging messages and dropping them. Upstream read on,
// and dropped what passed MaximumInflight (1,205 acknowledged messages of
// 377,481 with 64 publishers and 64 subscribers).
//
// A publisher waits at most maxPause per publish, then reads its next
// packet (its PINGREQ, say) and may wait again: publishers that feed each
// other's subscribers cannot hold each other for good, and a client
// waiting on a subscriber that itself waits does not wait. A subscriber
// that acknowledges nothing for stallLimit holds nobody: its messages
// stay in its session up to the bounds, past which the oldest are
// dropped (counted and logged), as for a session without a connection.

const (
	// maxPause bounds one wait of a publisher.
	maxPause = time.Second
	// stallLimit is how long a congested subscriber may acknowledge
	// nothing before it no longer slows its publishers.
	stallLimit = 5 * time.Second
	// pausePoll is how often a waiting publisher looks at the
	// subscriber, whatever woke it or not.
	pausePoll = 20 * time.Millisecond
)

// flowState is a client's part in back-pressure, as publisher and as
// subscriber.
type flowState struct {
	// slowedBy is a subscriber that a publish of this client's was
	// parked for: the client's reader waits for it before it reads on.
	slowedBy atomic.Pointer[Client]
	// pausedOn is the subscriber this client's reader waits for, nil
	// while it reads.
	pausedOn atomic.Pointer[Client]
	// acks counts the acknowledgements of the client's messages
	// (PUBACK, PUBCOMP): its progress as a subscriber.
	acks atomic.Uint64
	// waiters counts the publishers waiting for this client; room wakes
	// them when what was parked for it is sent.
	waiters atomic.Int32
	roomMu  sync.Mutex
	room    chan struct{} // guarded by roomMu; closed and replaced to wake
	// progressAcks and progressAt are the acknowledgements last seen by
	// a waiting publisher, and when they changed; stalled is set once
	// they did not change for stallLimit. Guarded by roomMu.
	progressAcks uint64
	progressAt   time.Time
	stalled      bool
	// releasing is held by the goroutine that releases the client's
	// parked messages (Server.releaseParked).
	releasing sync.Mutex
}

// congested reports whether messages wait for cl's receive window.
func (cl *Client) congested() bool { return cl.State.Inflight.HasParked() }

// acknowledged counts an acknowledgement of one of cl's messages, and
// wakes the publishers waiting for cl once nothing of it waits any more.
func (cl *Client) acknowledged() {
	f := &cl.State.flow
	f.acks.Add(1)
	if f.waiters.Load() > 0 && !cl.congested() {
		f.wakeWaiters()
	}
}

func (f *flowState) wakeWaiters() {
	f.roomMu.Lock()
	if f.room != nil {
		close(f.room)
		f.room = nil
	}
	f.roomMu.Unlock()
}

// roomSignal returns the channel that is closed when the publishers
// waiting for the client are to look again.
func (f *flowState) roomSignal() chan struct{} {
	f.roomMu.Lock()
	defer f.roomMu.Unlock()
	if f.room == nil {
		f.room = make(chan struct{})
	}
	return f.room
}

// stalledNow reports whether the subscriber acknowledged nothing for
// stallLimit while congested, as seen at now, noting what it
// acknowledged.
func (f *flowState) stalledNow(now time.Time) bool {
	f.roomMu.Lock()
	defer f.roomMu.Unlock()
	if a := f.acks.Load(); a != f.progressAcks || f.progressAt.IsZero() {
		f.progressAcks, f.progressAt, f.stalled = a, now, false
		return false
	}
	if now.Sub(f.progressAt) >= stallLimit {
		f.stalled = true
	}
	return f.stalled
}

// waitForRoom is the wait of cl's reader, before it reads on, for sub, a
// subscriber a publish of cl's was parked for: until nothing waits for
// sub's receive window, at most maxPause. It does not wait for itself, a
// closed subscriber, one that waits itself, or one stalled.
func (cl *Client) waitForRoom(sub *Client) {
	f := &sub.State.flow
	now := time.Now()
	if sub == cl || sub.Closed() || sub.State.flow.pausedOn.Load() != nil || f.stalledNow(now) || !sub.congested() {
		return
	}
	cl.State.flow.pausedOn.Store(sub)
	f.waiters.Add(1)
	defer func() {
		f.waiters.Add(-1)
		cl.State.flow.pausedOn.Store(nil)
	}()
	poll := time.NewTimer(pausePoll)
	defer poll.Stop()
	deadline := now.Add(maxPause)
	for {
		room := f.roomSignal()
		if !sub.congested() {
			return
		}
		select {
		case <-room:
		case <-poll.C:
			poll.Reset(pausePoll)
		case <-cl.State.open.Done():
			return
		}
		now = time.Now()
		if now.After(deadline) || sub.Closed() || sub.State.flow.pausedOn.Load() != nil || f.stalledNow(now) {
			return
		}
	}
}

// readOn makes the reader of cl wait for the subscriber its last publish
// was parked for, if any, before it reads on.
func (cl *Client) readOn() {
	if sub := cl.State.flow.slowedBy.Load(); sub != nil {
		cl.State.flow.slowedBy.Store(nil)
		cl.waitForRoom(sub)
	}
}
