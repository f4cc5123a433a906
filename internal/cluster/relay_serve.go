package cluster

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// receiver is what a node remembers of the messages one peer sent it:
// the sequence number of the last one delivered, within the peer's
// process epoch, so that a message sent again on a new stream is not
// delivered twice.
type receiver struct {
	mu    sync.Mutex
	epoch uint64 // guarded by mu
	last  uint64 // guarded by mu
}

func (r *relay) receiver(node string) *receiver {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc, ok := r.recv[node]
	if !ok {
		rc = &receiver{}
		r.recv[node] = rc
	}
	return rc
}

// serve reads a stream of messages from a peer on c and delivers them to
// this node's broker, in order, and acknowledges what it delivered once
// the next frame is not in its buffer yet (reading it may wait), or
// after relayAckEvery messages or relayAckAfter, whichever comes first.
//
// The sender writes a frame as soon as it has a message, so under load
// frames of one message wait here one after the other: an
// acknowledgement each would cost a write here and a read there per
// message.
func (r *relay) serve(c net.Conn) {
	br := bufio.NewReaderSize(c, 64<<10)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	h, err := readRelayHeader(br)
	if err != nil {
		r.n.log.Warn("message stream refused", "remote", c.RemoteAddr(), "err", err)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	rc := r.receiver(h.node)
	var f frame
	var owed int        // messages and pings delivered and not acknowledged
	var owedSince int64 // when the first of them was, Unix ns
	for {
		d, count, err := readFrame(br)
		if err != nil {
			return
		}
		rc.mu.Lock()
		if rc.epoch != h.epoch {
			// A new process of the peer: its numbers start again.
			rc.epoch, rc.last = h.epoch, 0
		}
		now := time.Now().UnixNano()
		for range count {
			m, ping := decodeRelayItem(d)
			if d.Err() != nil {
				rc.mu.Unlock()
				r.n.log.Warn("message stream closed: malformed message", "from", h.node)
				return
			}
			if ping || m.seq <= rc.last {
				continue
			}
			rc.last = m.seq
			if m.left < 0 {
				r.expired.Add(1)
				continue
			}
			var expires int64
			if m.left > 0 {
				expires = now + m.left
			}
			if b := r.n.broker; b != nil {
				b.Deliver(h.node, m.msg, m.groups, expires)
			}
			r.received.Add(1)
		}
		last := rc.last
		rc.mu.Unlock()
		if owed == 0 {
			owedSince = now
		}
		owed += count
		if owed < relayAckEvery && now-owedSince < int64(relayAckAfter) && frameBuffered(br) {
			continue
		}
		owed = 0
		f.reset()
		f.buf = binary.AppendUvarint(f.buf, last)
		f.count = 1
		_ = c.SetWriteDeadline(time.Now().Add(relayAckWait))
		if _, err := c.Write(f.bytes()); err != nil {
			return
		}
	}
}

// frameBuffered reports whether br holds the whole of the next frame, so
// that reading it does not wait for the connection.
func frameBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(min(br.Buffered(), binary.MaxVarintLen64))
	n, k := binary.Uvarint(b)
	return k > 0 && uint64(br.Buffered()-k) >= n
}
