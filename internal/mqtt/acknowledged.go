package mqtt

import (
	"context"
	"sync/atomic"
)

// dss: a graceful shutdown waits for the clients to acknowledge what was
// sent to them; see AwaitAcknowledgements.

// ackWaiter wakes AwaitAcknowledgements when an acknowledgement arrives
// or a connection ends. It costs the path of every PUBACK one atomic
// load while nobody waits.
type ackWaiter struct {
	waiting atomic.Bool
	wake    chan struct{} // capacity 1
}

func newAckWaiter() *ackWaiter { return &ackWaiter{wake: make(chan struct{}, 1)} }

// signal wakes the waiter, if any.
func (w *ackWaiter) signal() {
	if !w.waiting.Load() {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// AwaitAcknowledgements waits until no connected client has a message of
// the server's unacknowledged (a QoS 1 or 2 delivery without its PUBACK
// or PUBCOMP), or until ctx is done, whose error it then returns. Messages
// queued for sessions without a connection, and those sent to clients
// that have gone, do not count: nothing can acknowledge them before the
// server stops.
//
// dss: the shutdown polled the count of every message in flight for the
// whole grace period, which an offline persistent session with a queued
// message, or a client that vanished with a delivery unacknowledged,
// kept above zero.
func (s *Server) AwaitAcknowledgements(ctx context.Context) error {
	w := s.acks
	w.waiting.Store(true)
	defer w.waiting.Store(false)
	for s.awaitingAcknowledgement() {
		select {
		case <-w.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// awaitingAcknowledgement reports whether a connected client has a
// message of the server's in flight.
func (s *Server) awaitingAcknowledgement() bool {
	clients := s.Clients.AppendAll(nil)
	for _, cl := range clients {
		if cl.Net.Inline || cl.Closed() {
			continue
		}
		if cl.State.Inflight.outbound() > 0 {
			return true
		}
	}
	return false
}
