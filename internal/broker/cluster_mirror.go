package broker

import (
	"slices"
	"strings"
	"time"

	mqtt "github.com/dssio/dss/internal/mqtt"
	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/internal/cluster"
	"github.com/dssio/dss/internal/pubsub"
)

var _ cluster.Broker = (*spanning)(nil)

// Deliver hands a message another node routed to this node's
// subscribers.
func (sp *spanning) Deliver(from string, msg []byte, groups []string, expires int64) {
	var pk packets.Packet
	if _, err := decodeMessage(msg, &pk); err != nil {
		sp.b.log.Warn("message from another node dropped", "from", from, "err", err)
		return
	}
	now := time.Now()
	pk.Created = now.Unix()
	if expires != 0 {
		pk.Expires = expires
		left := time.Duration(expires - now.UnixNano())
		pk.Properties.MessageExpiryInterval = uint32(max((left+time.Second-1)/time.Second, 1))
	}
	var serves func(string) bool
	if len(groups) > 0 {
		serves = func(key string) bool { return slices.Contains(groups, key) }
	}
	sp.b.srv.DeliverRemote(&pk, serves)
}

// retained hears of a message retained here (or cleared): it goes
// to the replicated state, as of a stamp of this node's clock. A QoS 1 or
// 2 publish of a client is acknowledged once the state has it on every
// reachable node (Route attaches the wait), unless no majority can be
// reached, when nothing is waited for.
func (sp *spanning) retained(cl *mqtt.Client, pk *packets.Packet) {
	topic := pk.TopicName
	stamp := sp.c.Stamp()
	var msg []byte
	if len(pk.Payload) > 0 {
		msg = appendMessage(nil, pk, pk.Expires)
	}
	var wait *part
	if !cl.Net.Inline && pk.FixedHeader.Qos > 0 && sp.c.HasLeader() {
		wait = &part{}
		time.AfterFunc(sp.wait, wait.complete)
	}
	sp.mu.Lock()
	if cur, ok := sp.mirror[topic]; !ok || stamp.After(cur) {
		sp.mirror[topic] = stamp
	}
	if wait != nil {
		sp.retainWait[retainKey{cl.ID, topic}] = wait
	}
	sp.mu.Unlock()
	var done func(error)
	if wait != nil {
		done = func(error) { wait.complete() }
	}
	var expires int64
	if msg != nil {
		expires = pk.Expires
	}
	sp.c.Retain(topic, stamp, msg, expires, done)
}

// RetainedChanged mirrors a change of the replicated retained messages
// into the broker core, unless the core holds a newer message of this
// node's own (published here, its entry not yet applied).
func (sp *spanning) RetainedChanged(topic string, r pubsub.Retained) {
	sp.mu.Lock()
	if cur, ok := sp.mirror[topic]; ok && cur.After(r.Stamp) {
		sp.mu.Unlock()
		return
	}
	if r.Message == nil {
		delete(sp.mirror, topic)
	} else {
		sp.mirror[topic] = r.Stamp
	}
	sp.mu.Unlock()
	sp.setRetained(topic, r.Message)
}

// setRetained sets topic's retained message in the core (msg nil: none).
func (sp *spanning) setRetained(topic string, msg []byte) {
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Retain: true}, TopicName: topic}
	if msg != nil {
		expires, err := decodeMessage(msg, &pk)
		if err != nil {
			sp.b.log.Warn("retained message of the cluster not read", "topic", topic, "err", err)
			return
		}
		pk.FixedHeader.Retain = true
		pk.Created = time.Now().Unix()
		if expires != 0 {
			pk.Expires = expires
			pk.Expiry = (expires + int64(time.Second) - 1) / int64(time.Second)
		}
	}
	sp.b.srv.Topics.RetainMessage(pk)
}

// Restored mirrors the whole replicated state of retained messages into
// the core, after a snapshot replaced it.
func (sp *spanning) Restored() {
	want := map[string][]byte{}
	stamps := map[string]pubsub.Retained{}
	sp.ps.EachRetained(func(topic string, r pubsub.Retained) {
		want[topic] = r.Message
		stamps[topic] = r
	})
	for topic := range sp.b.srv.Topics.Retained.GetAll() {
		if _, ok := want[topic]; !ok && !strings.HasPrefix(topic, "$SYS") {
			sp.setRetained(topic, nil)
		}
	}
	sp.mu.Lock()
	clear(sp.mirror)
	for topic, r := range stamps {
		sp.mirror[topic] = r.Stamp
	}
	sp.mu.Unlock()
	for topic, msg := range want {
		sp.setRetained(topic, msg)
	}
	// The claims the snapshot holds were not announced one by one: the
	// connections here that a newer one elsewhere took over end now.
	sp.mu.Lock()
	held := make(map[string]*localConn, len(sp.conns))
	for id, lc := range sp.conns {
		held[id] = lc
	}
	sp.mu.Unlock()
	for id := range held {
		if s, ok := sp.ps.Session(id); ok {
			sp.Claimed(id, s)
		}
	}
}
