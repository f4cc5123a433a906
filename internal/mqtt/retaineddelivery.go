// SPDX-License-Identifier: MIT

package mqtt

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: the retained messages a new subscription matches are sent as the
// client takes them: while its queue of writes is short and, for QoS 1
// and 2, while its receive window has room. What does not go at once, on
// the reader that handled the SUBSCRIBE, is sent by a goroutine of the
// client's, woken as its writes go out and its acknowledgements come,
// which reads each message when its turn comes. Upstream copied every
// matching message (800 bytes each) and queued them all at once: a new
// subscriber to # of a server with 139,154 retained messages waited 20 s
// for the first, lost 90,000 of them at the bounds of its queues, and
// three that did not read held 1.7 GB.

// retainedWindow is how many writes may wait for a client before its
// retained messages wait for them to go out.
const retainedWindow = 64

// retainedRetry is how often a goroutine that waits for room looks
// again, whatever woke it or not.
const retainedRetry = 100 * time.Millisecond

// retainedSender sends a client's retained messages that could not go at
// once; every client has one, idle.
type retainedSender struct {
	mu      sync.Mutex
	pending []retainedBatch // guarded by mu: the first is being sent
	running bool            // guarded by mu: the goroutine runs
	room    chan struct{}   // made with the first goroutine
	// waiting is set while the goroutine waits for room: wake then
	// signals room.
	waiting atomic.Bool
	done    sync.WaitGroup
}

// retainedBatch is the retained messages of one subscription still to
// send: topics, nil until the batch's turn, and the next to send.
type retainedBatch struct {
	sub    packets.Subscription
	mark   uint64 // retainedMark when the subscription was made
	topics []string
	next   int
}

// wake tells a goroutine waiting for room that some may have come: a
// write went out, or an acknowledgement came.
func (r *retainedSender) wake() {
	if r.waiting.Load() {
		select {
		case r.room <- struct{}{}:
		default:
		}
	}
}

// wait waits until the client's goroutine of retained messages, if one
// runs, has ended; it ends once the client is closed.
func (r *retainedSender) wait() { r.done.Wait() }

// publishRetainedToClient sends cl the retained messages its
// subscription sub matches [MQTT-3.8.4-4]: at once as far as cl has room
// for them, the rest later (see retainedSender). mark is retainedMark
// when the subscription was made: a message retained since reached the
// subscription as it was published, and is not sent again.
func (s *Server) publishRetainedToClient(cl *Client, sub packets.Subscription, existed bool, mark uint64) {
	if IsSharedFilter(sub.Filter) {
		return // 4.8.2 Non-normative - Shared Subscriptions - No Retained Messages are sent to the Session when it first subscribes.
	}

	if sub.RetainHandling == 1 && existed || sub.RetainHandling == 2 { // [MQTT-3.3.1-10] [MQTT-3.3.1-11]
		return
	}

	sub.FwdRetainedFlag = true
	r := &cl.State.retained
	r.mu.Lock()
	busy := len(r.pending) > 0
	r.mu.Unlock()
	batch := retainedBatch{sub: sub, mark: mark}
	if !busy {
		// Nothing of an earlier subscription waits: these go first.
		topics := s.Topics.RetainedTopics(sub.Filter, nil)
		n := s.sendRetained(cl, sub, mark, topics)
		if n == len(topics) {
			return
		}
		batch.topics, batch.next = topics, n
	}
	r.mu.Lock()
	r.pending = append(r.pending, batch)
	start := !r.running
	if start {
		r.running = true
		if r.room == nil {
			r.room = make(chan struct{}, 1)
		}
		r.done.Add(1)
	}
	r.mu.Unlock()
	if start {
		go s.sendRetainedLater(cl)
	}
}

// sendRetained sends cl the retained messages of topics, retained by
// mark, through sub as long as it has room for them, and returns how many
// of topics it went through.
func (s *Server) sendRetained(cl *Client, sub packets.Subscription, mark uint64, topics []string) int {
	for i, topic := range topics {
		if !s.retainedRoom(cl, sub) {
			return i
		}
		pk, ok := s.Topics.retainedAsOf(topic, mark)
		if !ok {
			continue // gone or replaced since
		}
		if _, err := s.publishToClient(cl, sub, &pk, nil); err != nil {
			s.Log.Debug("failed to publish retained message", "error", err, "client", cl.ID, "listener", cl.Net.Listener, "topic", topic)
		}
	}
	return len(topics)
}

// retainedRoom reports whether cl takes one more retained message of
// sub now: its queue of writes is short and, for QoS 1 and 2, a message
// would be sent at once rather than wait for its receive window.
func (s *Server) retainedRoom(cl *Client, sub packets.Subscription) bool {
	if atomic.LoadInt32(&cl.State.outboundQty) >= retainedWindow {
		return false
	}
	if sub.Qos == 0 || cl.Net.Inline {
		return true
	}
	i := cl.State.Inflight
	if atomic.LoadInt32(&i.maximumSendQuota) > 0 && atomic.LoadInt32(&i.sendQuota) <= 0 {
		return false
	}
	return !i.HasParked()
}

// sendRetainedLater is cl's goroutine of retained messages: it sends the
// pending batches in order, waiting for room, until none is left or cl
// is closed.
func (s *Server) sendRetainedLater(cl *Client) {
	r := &cl.State.retained
	defer r.done.Done()
	retry := time.NewTimer(retainedRetry)
	defer retry.Stop()
	for {
		r.mu.Lock()
		if len(r.pending) == 0 || cl.Closed() {
			r.pending, r.running = nil, false
			r.mu.Unlock()
			return
		}
		batch := r.pending[0]
		r.mu.Unlock()
		if batch.topics == nil {
			if _, held := cl.State.Subscriptions.Get(batch.sub.Filter); held {
				batch.topics = s.Topics.RetainedTopics(batch.sub.Filter, nil)
			}
		}
		for batch.next < len(batch.topics) {
			batch.next += s.sendRetained(cl, batch.sub, batch.mark, batch.topics[batch.next:])
			if batch.next == len(batch.topics) {
				break
			}
			r.waiting.Store(true)
			if !s.retainedRoom(cl, batch.sub) { // no wake lost in between
				retry.Reset(retainedRetry)
				select {
				case <-r.room:
				case <-retry.C:
				case <-cl.State.open.Done():
				}
			}
			r.waiting.Store(false)
			if cl.Closed() {
				break
			}
		}
		r.mu.Lock()
		r.pending[0] = retainedBatch{}
		r.pending = r.pending[1:]
		r.mu.Unlock()
	}
}
