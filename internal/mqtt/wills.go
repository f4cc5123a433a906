// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package mqtt

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/mqtt/packets"
)

// dss: a Will is a publish of its client's, checked like one when its
// connection is accepted (CONNACK 0x87) and again when it is sent, on
// both paths: at once when the connection ends, and after its Will Delay
// Interval. The delayed path skipped the check, so a Will whose right to
// publish was taken away during its delay (a policy reloaded) was sent
// all the same. A delayed Will keeps its client for the check, which may
// have left the list of clients by then.

// delayedWills holds the Wills that wait for their delay, by client id.
type delayedWills struct {
	mu    sync.Mutex
	wills map[string]delayedWill // guarded by mu
}

// delayedWill is a Will waiting for its delay: its publish, and the
// client whose Will it is.
type delayedWill struct {
	pk packets.Packet
	cl *Client
}

func newDelayedWills() *delayedWills {
	return &delayedWills{wills: map[string]delayedWill{}}
}

// Add holds pk, the Will of cl, until its delay passes.
func (w *delayedWills) Add(id string, pk packets.Packet, cl *Client) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wills[id] = delayedWill{pk: pk, cl: cl}
}

// Get returns the Will of client id waiting for its delay.
func (w *delayedWills) Get(id string) (packets.Packet, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, ok := w.wills[id]
	return d.pk, ok
}

// Delete drops the Will of client id [MQTT-3.1.3-9].
func (w *delayedWills) Delete(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.wills, id)
}

// Len returns the number of Wills waiting.
func (w *delayedWills) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.wills)
}

// due takes out the Wills whose delay has passed at now (Unix seconds).
func (w *delayedWills) due(now int64) []delayedWill {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []delayedWill
	for id, d := range w.wills {
		if now > d.pk.Expiry {
			out = append(out, d)
			delete(w.wills, id)
		}
	}
	return out
}

// willConsumed reports whether a Will on topic would be a publish that
// Options.Consumer consumes (Options.ConsumedTopic): such a publish is answered on
// the connection it came on, which is gone when the Will is sent, and
// routing it would hand it as it is to the subscribers of the topic,
// which no such publish ever reaches. A Will there is refused at CONNECT
// with 0x87, and never sent.
func (s *Server) willConsumed(topic string) bool {
	return s.Options.ConsumedTopic != "" && topic == s.Options.ConsumedTopic
}

// willAllowed reports whether cl may send its Will on topic now.
func (s *Server) willAllowed(cl *Client, topic string) bool {
	if s.willConsumed(topic) || !s.Options.allowed(cl, topic, true) {
		s.Log.Debug("will not authorized", "client", cl.ID, "topic", topic)
		return false
	}
	return true
}

// sendLWT issues an LWT message to a topic when a client disconnects.
func (s *Server) sendLWT(cl *Client) {
	if atomic.LoadUint32(&cl.Properties.Will.Flag) == 0 {
		return
	}
	if cl.Properties.Will.WillDelayInterval > 0 && cl.IsTakenOver() {
		// dss: a new connection took the session over before the delay
		// passed, so the will is not sent [MQTT-3.1.3-9]. The old
		// connection's reader may come here after the new connection
		// cleared the wills waiting for their delay.
		return
	}

	will := cl.Properties.Will

	// dss: checked again as it is sent (what the client may publish may
	// have changed since it connected); a delayed Will is checked once
	// more when its delay has passed.
	if !s.willAllowed(cl, will.TopicName) {
		atomic.StoreUint32(&cl.Properties.Will.Flag, 0)
		return
	}

	pk := packets.Packet{
		FixedHeader: packets.FixedHeader{
			Type:   packets.Publish,
			Retain: will.Retain, // [MQTT-3.1.2-14] [MQTT-3.1.2-15]
			Qos:    will.Qos,
		},
		TopicName: will.TopicName,
		Payload:   will.Payload,
		Properties: packets.Properties{
			User: will.User,
		},
		Origin:  cl.ID,
		Created: time.Now().Unix(),
	}

	if cl.Properties.Will.WillDelayInterval > 0 {
		pk.Connect.WillProperties.WillDelayInterval = cl.Properties.Will.WillDelayInterval
		pk.Expiry = time.Now().Unix() + int64(pk.Connect.WillProperties.WillDelayInterval)
		s.loop.willDelayed.Add(cl.ID, pk, cl)
		return
	}

	if pk.FixedHeader.Retain {
		s.retainMessage(cl, &pk)
	}

	s.publishToSubscribers(&pk, nil)                // [MQTT-3.1.2-8]
	atomic.StoreUint32(&cl.Properties.Will.Flag, 0) // [MQTT-3.1.2-10]
}

// sendDelayedLWT sends any LWT messages which have reached their issue time.
func (s *Server) sendDelayedLWT(dt int64) {
	for _, d := range s.loop.willDelayed.due(dt) {
		pk, cl := d.pk, d.cl
		cl.Properties.Will = Will{} // [MQTT-3.1.2-10]
		if !s.willAllowed(cl, pk.TopicName) {
			continue // dss: no longer granted
		}
		if pk.FixedHeader.Retain {
			s.retainMessage(cl, &pk)
		}
		s.publishToSubscribers(&pk, nil) // [MQTT-3.1.2-8]
	}
}
