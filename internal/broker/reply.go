package broker

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/dssio/dss/internal/mqtt/packets"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/wire"
)

// reply is the memory of one response: the request's response topic and
// correlation data, copied (the connection reads its next packet into the
// request's memory), and the envelope with the version's text, in one
// object for the usual sizes.
//
// The broker keeps a QoS 1 response until the client acknowledges it, and
// resends it after a reconnect, so a reply is recycled only when nothing
// holds it: the broker retains it for every copy it keeps (the inflight
// entry of each receiver, each entry of a write queue) and releases it
// when it lets go of one, and the call holds it until the response is
// handed over. A copy the broker drops without a release (a session that
// ends) leaves the reply to the garbage collector.
type reply struct {
	refs atomic.Int32
	user [3]packets.UserProperty
	// buf holds the topic, the correlation data, the version's text (up
	// to versionRoom bytes) and a GET's value, in that order: the
	// vendor's response topics (70 to 100 bytes), 16 bytes of
	// correlation data and a value of 100 bytes fit.
	buf [408]byte // with the rest, 512 bytes: a size class of the allocator
}

// versionRoom is the most a version's text takes: 19 digits of
// milliseconds, 10 of counter, two colons and a node id of up to 26 bytes.
const versionRoom = 57

var replies = sync.Pool{New: func() any { return new(reply) }}

// Retain adds a holder.
func (r *reply) Retain() { r.refs.Add(1) }

// Release lets go of a hold; the last recycles r.
func (r *reply) Release() {
	switch n := r.refs.Add(-1); {
	case n == 0:
		replies.Put(r)
	case n < 0:
		panic("broker: a response's memory released more often than retained")
	}
}

var _ packets.Owner = (*reply)(nil)

// keep copies the response topic and correlation data of the request to
// a reply, which c holds.
func (c *call) keep(topic string, correlation []byte) {
	r := replies.Get().(*reply)
	r.refs.Store(1)
	buf := r.buf[:0]
	if n := len(topic) + len(correlation) + versionRoom; n > len(r.buf) {
		buf = make([]byte, 0, n)
	}
	buf = append(buf, topic...)
	buf = append(buf, correlation...)
	c.reply = r
	// The string points into the reply, which it keeps alive; nothing
	// writes to those bytes until the reply is recycled.
	c.responseTopic = unsafe.String(unsafe.SliceData(buf), len(topic))
	c.correlation = buf[len(topic):len(buf):len(buf)]
	c.spare = buf[len(buf):]
}

// versioned returns the envelope of a response with a version, in c's
// reply; the room left in the reply (c.spare) is after the version's
// text.
func (c *call) versioned(version hlc.Timestamp) []packets.UserProperty {
	text := version.AppendText(c.spare[:0])
	c.spare = text[len(text):]
	c.reply.user = [3]packets.UserProperty{
		okNoVersion[0],
		okNoVersion[1],
		{Key: wire.PropTimestamp, Val: unsafe.String(unsafe.SliceData(text), len(text))},
	}
	return c.reply.user[:]
}
