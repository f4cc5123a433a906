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

// newDropLog limits the log lines about dropped messages.
func newDropLog() *rate.Limiter { return rate.NewLimiter(rate.Every(time.Second), 1) }

// logDropped counts a message dropped for cl and logs it, with reason,
// when a line is allowed.
func (s *Server) logDropped(cl *Client, reason string) {
	s.unloggedDrops.Add(1)
	if s.dropLog.Allow() {
		s.Log.Warn("messages for a connected client dropped", "client", cl.ID, "listener", cl.Net.Listener,
			"reason", reason, "dropped", s.unloggedDrops.Swap(0))
	}
}
