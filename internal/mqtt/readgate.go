// SPDX-License-Identifier: MIT

package mqtt

import "sync/atomic"

// readGate counts the packets of a connection that the application has
// in hand; at Options.MaxPendingPerClient its reader stops reading until
// one is finished. dss: the client is then slowed by TCP back-pressure,
// and nobody else waits for it.
type readGate struct {
	pending atomic.Int32
	wake    chan struct{} // a token when pending fell below the bound
}

// BeginPending counts a packet of cl that the application took and has
// not finished (a state store request not yet answered). Every call is
// matched by one EndPending.
func (cl *Client) BeginPending() { cl.Net.gate.pending.Add(1) }

// EndPending finishes a packet counted by BeginPending; a reader held at
// the bound reads again. It may be called from any goroutine.
func (cl *Client) EndPending() {
	if cl.Net.gate.pending.Add(-1) < cl.ops.options.MaxPendingPerClient && cl.Net.gate.wake != nil {
		select {
		case cl.Net.gate.wake <- struct{}{}:
		default:
		}
	}
}

// Pending returns the number of packets of cl the application has in
// hand.
func (cl *Client) Pending() int32 { return cl.Net.gate.pending.Load() }

// readHeld reports whether the connection is not to be read now.
func (cl *Client) readHeld() bool {
	limit := cl.ops.options.MaxPendingPerClient
	return limit > 0 && cl.Net.gate.pending.Load() >= limit
}

// waitReadable waits until the connection may be read again or the
// client is stopped.
func (cl *Client) waitReadable() {
	for cl.readHeld() {
		select {
		case <-cl.Net.gate.wake:
		case <-cl.State.open.Done():
			return
		}
	}
}
