package cluster

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"time"
)

var (
	errNoAddress  = errors.New("cluster: no address is known for the peer")
	errAckTimeout = errors.New("cluster: the peer did not acknowledge within 2s")
)

// relayItem is a message on its way to one peer.
type relayItem struct {
	seq     uint64
	qos     byte
	expires int64
	groups  []string
	msg     []byte
	size    int64
	w       *relayWait // released once the peer has it; nil: nobody waits
}

// link is the stream of messages to one peer. Its messages are kept, in
// order, until the peer acknowledges them: when the stream breaks, the
// next one sends them again from the first not acknowledged (the peer
// skips those it delivered already). While the peer cannot be reached,
// QoS 0 messages for it are dropped and the others kept, up to
// Config.RelayBuffer bytes.
type link struct {
	r    *relay
	peer string

	mu        sync.Mutex
	items     []*relayItem // guarded by mu; not acknowledged, in order
	sent      int          // guarded by mu; items[:sent] are written on conn
	bytes     int64        // guarded by mu; of items
	seq       uint64       // guarded by mu; of the last message queued
	conn      net.Conn     // guarded by mu; nil while down
	up        bool         // guarded by mu
	waitSince time.Time    // guarded by mu; the oldest write not acknowledged, zero for none
	since     time.Time    // guarded by mu; when up last changed
	err       string       // guarded by mu; why it is down
	everUp    bool         // guarded by mu
	logged    time.Time    // guarded by mu; the last line about it being down
	failures  int          // guarded by mu; attempts since it went down
	ended     bool         // guarded by mu

	wake chan struct{}
	done chan struct{}
}

func newLink(r *relay, peer string) *link {
	return &link{r: r, peer: peer, since: time.Now(), wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (l *link) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// end stops the link's goroutine; its messages are dropped.
func (l *link) end() {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.ended = true
	close(l.done)
	c := l.conn
	ws := l.takeWaitersLocked()
	l.mu.Unlock()
	if c != nil {
		c.Close()
	}
	release(ws)
}

func (l *link) isUp() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.up
}

func (l *link) status() RelayPeer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return RelayPeer{ID: l.peer, Up: l.up, Since: l.since, Err: l.err, Buffered: len(l.items), BufferedBytes: l.bytes}
}

// enqueue queues it for the peer. It reports whether w (if not nil) is
// to be released by the link: the peer is reachable, so the message's
// publisher waits for its acknowledgement.
func (l *link) enqueue(it *relayItem, w *relayWait) bool {
	l.mu.Lock()
	if l.ended || !l.up && it.qos == 0 {
		l.mu.Unlock()
		l.r.dropped.Add(1)
		return false
	}
	l.seq++
	it.seq = l.seq
	kept := false
	if l.up && w != nil {
		it.w, kept = w, true
	}
	l.items = append(l.items, it)
	l.bytes += it.size
	var over []*relayWait
	for l.bytes > l.r.n.cfg.RelayBuffer && len(l.items) > 1 {
		old := l.items[0]
		l.items[0] = nil
		l.items = l.items[1:]
		l.bytes -= old.size
		if l.sent > 0 {
			l.sent--
		}
		if old.w != nil {
			over = append(over, old.w)
		}
		l.r.dropped.Add(1)
	}
	l.mu.Unlock()
	release(over)
	l.signal()
	return kept
}

func release(ws []*relayWait) {
	for _, w := range ws {
		w.release()
	}
}

// takeWaitersLocked detaches the waiters of every queued message: their
// publishers are no longer held up by this peer.
func (l *link) takeWaitersLocked() []*relayWait {
	var ws []*relayWait
	for _, it := range l.items {
		if it.w != nil {
			ws = append(ws, it.w)
			it.w = nil
		}
	}
	return ws
}

// run connects to the peer and writes its messages, connecting again
// whenever the stream breaks, until the link ends.
func (l *link) run() {
	pause := relayRedial
	for {
		select {
		case <-l.done:
			return
		default:
		}
		c, err := l.r.dialRelay(l.peer)
		if err != nil {
			l.setDown(err)
			select {
			case <-time.After(pause):
			case <-l.done:
				return
			}
			pause = min(2*pause, relayRedialMax)
			continue
		}
		pause = relayRedial
		if !l.setUp(c) {
			c.Close()
			return
		}
		read := make(chan struct{})
		go func() {
			defer close(read)
			l.readAcks(c)
		}()
		err = l.write(c)
		c.Close()
		<-read
		l.setDown(err)
	}
}

// setUp makes c the link's stream; false if the link ended. The peer is
// taken for reachable once it acknowledges what c carries (see acked): a
// connection that opens is not proof, a proxy or a hung peer accepts
// one.
func (l *link) setUp(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return false
	}
	l.conn = c
	l.sent, l.waitSince = 0, time.Time{}
	return true
}

// reachedLocked records that the peer acknowledged on its stream.
func (l *link) reachedLocked() {
	if l.up {
		return
	}
	if !l.logged.IsZero() {
		l.r.n.log.Info("cluster peer's message stream up again", "peer", l.peer,
			"failures", l.failures, "down_for", time.Since(l.since).Round(time.Millisecond), "buffered", len(l.items))
	}
	l.up, l.everUp = true, true
	l.since, l.err, l.failures, l.logged = time.Now(), "", 0, time.Time{}
}

// setDown records that the stream broke or could not be made: the
// publishers waiting for the peer are let go, QoS 0 messages dropped.
func (l *link) setDown(err error) {
	l.mu.Lock()
	now := time.Now()
	was := l.up
	l.conn, l.up, l.sent, l.waitSince = nil, false, 0, time.Time{}
	if err != nil {
		l.err = err.Error()
	}
	l.failures++
	if was {
		l.since = now
	}
	ws := l.takeWaitersLocked()
	kept := l.items[:0]
	for _, it := range l.items {
		if it.qos == 0 {
			l.bytes -= it.size
			l.r.dropped.Add(1)
			continue
		}
		kept = append(kept, it)
	}
	clear(l.items[len(kept):])
	l.items = kept
	switch {
	case l.ended:
	case was, l.logged.IsZero() && now.Sub(l.since) >= relayQuietStart:
		l.logged = now
		l.r.n.log.Warn("cluster peer unreachable for messages", "peer", l.peer, "err", l.err, "buffered", len(l.items))
	case !l.logged.IsZero() && now.Sub(l.logged) >= peerRepeat:
		l.logged = now
		l.r.n.log.Warn("cluster peer still unreachable for messages", "peer", l.peer, "err", l.err,
			"since", l.since.Format(time.RFC3339), "failures", l.failures, "buffered", len(l.items))
	}
	l.mu.Unlock()
	release(ws)
}

// write writes the queued messages to c, and a ping when there is
// nothing to write, until c fails, the peer does not acknowledge within
// relayAckWait, or the link ends.
func (l *link) write(c net.Conn) error {
	tick := time.NewTicker(relayPingEvery)
	defer tick.Stop()
	var f frame
	// A new stream starts with a ping: the peer is reachable once it
	// answers.
	for ping := true; ; ping = false {
		if !ping {
			select {
			case <-l.wake:
			case <-tick.C:
				ping = true
			case <-l.done:
				return errClosed
			}
		}
		now := time.Now()
		f.reset()
		l.mu.Lock()
		if l.conn != c {
			l.mu.Unlock()
			return errClosed // the reader found it broken
		}
		if !l.waitSince.IsZero() && now.Sub(l.waitSince) > relayAckWait {
			l.mu.Unlock()
			return errAckTimeout
		}
		for l.sent < len(l.items) && len(f.buf) < relayMaxFrame {
			it := l.items[l.sent]
			var left int64
			if it.expires != 0 {
				if left = it.expires - now.UnixNano(); left <= 0 {
					left = -1 // expired: the peer skips it
				}
			}
			f.buf = appendRelayMessage(f.buf, it, left)
			f.count++
			l.sent++
		}
		if f.count == 0 && ping && l.waitSince.IsZero() {
			f.buf = append(f.buf, relayPing)
			f.count++
		}
		if f.count > 0 && l.waitSince.IsZero() {
			l.waitSince = now
		}
		more := l.sent < len(l.items)
		l.mu.Unlock()
		if f.count == 0 {
			continue
		}
		_ = c.SetWriteDeadline(now.Add(relayAckWait))
		if _, err := c.Write(f.bytes()); err != nil {
			return err
		}
		if more {
			l.signal()
		}
	}
}

// readAcks reads the peer's acknowledgements from c until it fails.
func (l *link) readAcks(c net.Conn) {
	br := bufio.NewReaderSize(c, 4<<10)
	for {
		d, count, err := readFrame(br)
		if err != nil {
			l.mu.Lock()
			if l.conn == c {
				l.conn = nil
			}
			l.mu.Unlock()
			c.Close()
			l.signal()
			return
		}
		for range count {
			seq := d.Uvarint()
			if d.Err() != nil {
				break
			}
			l.acked(c, seq)
		}
	}
}

// acked drops the messages up to seq, which the peer has.
func (l *link) acked(c net.Conn, seq uint64) {
	l.mu.Lock()
	if l.conn == c {
		l.reachedLocked()
	}
	i := 0
	var ws []*relayWait
	for i < len(l.items) && l.items[i].seq <= seq {
		it := l.items[i]
		l.bytes -= it.size
		if it.w != nil {
			ws = append(ws, it.w)
		}
		i++
	}
	if i > 0 {
		n := copy(l.items, l.items[i:])
		clear(l.items[n:])
		l.items = l.items[:n]
		l.r.sent.Add(int64(i))
	}
	l.sent = max(l.sent-i, 0)
	if l.sent == 0 {
		l.waitSince = time.Time{}
	} else {
		l.waitSince = time.Now()
	}
	l.mu.Unlock()
	release(ws)
}
