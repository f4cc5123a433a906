// SPDX-License-Identifier: MIT

package mqtt

import (
	"time"

	"golang.org/x/time/rate"
)

// dss: a message for a connected client that is dropped (its
// unacknowledged QoS 1 and 2 messages at Capabilities.MaximumInflight,
// its packet ids used up, or its queue of pending writes full) is counted
// in Info (InflightDropped, MessagesDropped) and logged at most once a
// second, with the number dropped since the line before. Upstream logged
// a line per message: a client that subscribed with QoS 1 and never
// acknowledged wrote a line for every message sent to it, 450,000 lines
// (52 MB) in 8 seconds.

// The drops a line did not report are reported by the event loop's next
// look (flushDropLogs), at most a second later: a burst of drops within
// a second was logged as its first drop alone (one line for 1,808).

// newDropLog limits the log lines about dropped messages.
func newDropLog() *rate.Limiter { return rate.NewLimiter(rate.Every(time.Second), 1) }

// dropNote is what the next line about drops names: the client and
// the reason of the last drop.
type dropNote struct {
	client, listener, reason string
}

// logDropped counts a message dropped for cl and logs it, with reason,
// when a line is allowed.
func (s *Server) logDropped(cl *Client, reason string) {
	s.unloggedDrops.Add(1)
	s.lastDrop.Store(&dropNote{client: cl.ID, listener: cl.Net.Listener, reason: reason})
	if s.dropLog.Allow() {
		s.logDrops()
	}
}

func (s *Server) logDrops() {
	n := s.unloggedDrops.Swap(0)
	if n == 0 {
		return
	}
	last := s.lastDrop.Load()
	s.Log.Warn("messages for a connected client dropped", "client", last.client, "listener", last.listener,
		"reason", last.reason, "dropped", n)
}

// flushDropLogs logs the drops that no line reported yet, once a line is
// allowed: every drop is in a line within about a second.
func (s *Server) flushDropLogs() {
	if s.unloggedDrops.Load() > 0 && s.dropLog.Allow() {
		s.logDrops()
	}
	s.Queues.flushLog()
}
