package cluster

import (
	"bufio"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/wire"
)

// forwardSession is the leader's end of one stream of writes that a node
// forwards to it (or of the node's own queue, once it leads): it submits
// the writes to the engine in the order they arrive, so that a client's
// writes are decided, logged and applied in the order it sent them, and
// hands each result to sink once the write is applied here.
//
// A session takes writes during one leadership (one ready epoch of this
// node) and only while it is the newest stream of its sender. Once it
// refuses a write it refuses every later one: the writes it applied are
// a prefix of the stream, so that the sender, which sends everything
// from the first refused write again on a new stream, never applies a
// client's write before an earlier one. Propose checks both conditions
// under the node's lock, in the order the writes are decided.
type forwardSession struct {
	n     *Node
	from  forwardHeader
	epoch uint64 // the ready epoch it takes writes in; 0: none
	sink  func(forwardResult)
	// refusing is set once a write of the session was refused for want of
	// a leader, or it is no longer its sender's newest stream.
	refusing atomic.Bool
}

// forwardOp is a forwarded write on its way through the leader's engine.
type forwardOp struct {
	op engine.Op
	id uint64
	s  *forwardSession
}

// submit carries out one forwarded write. It does not block.
func (s *forwardSession) submit(w *forwardedWrite) {
	if s.refusing.Load() || s.epoch == 0 {
		s.refusing.Store(true)
		s.sink(forwardResult{id: w.id, err: wire.ErrUnavailable.Text()})
		return
	}
	fo := &forwardOp{op: w.op(), id: w.id, s: s}
	fo.op.Caller = fo
	fo.op.Done = forwardDone
	s.n.engine.Submit(context.Background(), &fo.op)
}

// forwardDone is the Done of every forwarded write on the leader.
func forwardDone(op *engine.Op) {
	fo := op.Caller.(*forwardOp)
	r := resultOf(fo.id, &op.Result, fo.s.n.fsm.applying.Load())
	if r.unavailable() {
		fo.s.refusing.Store(true)
	}
	fo.s.sink(r)
}

// serveForward serves a stream of forwarded writes from another node on
// c until the stream ends.
func (n *Node) serveForward(c net.Conn) {
	br := bufio.NewReaderSize(c, 64<<10)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	h, err := readForwardHeader(br)
	if err != nil {
		n.log.Warn("forwarding stream refused", "remote", c.RemoteAddr(), "err", err)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	out := newFrameWriter(c, leaderWait, func(error) { c.Close() })
	s := n.openSession(h, func(r forwardResult) {
		out.append(func(b []byte) []byte { return appendForwardResult(b, &r) })
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		out.run()
	}()
	defer func() {
		n.closeSession(s)
		out.close()
		c.Close() // a write under way ends
		wg.Wait()
	}()
	for {
		d, count, err := readFrame(br)
		if err != nil {
			return
		}
		for range count {
			w := decodeForwardedWrite(d)
			if d.Err() != nil {
				n.log.Warn("forwarding stream closed: malformed write", "from", h.node)
				return
			}
			s.submit(&w)
		}
	}
}

// openSession registers a stream of h's sender as its newest, which ends
// the older ones, and ties it to this node's leadership: the one it
// leads in now, or the one it comes to within leaderWait (a follower may
// learn of a new leader before the leader has started its term). A
// session opened while this node leads in no term takes no writes.
func (n *Node) openSession(h forwardHeader, sink func(forwardResult)) *forwardSession {
	s := &forwardSession{n: n, from: h, sink: sink}
	s.epoch = n.awaitReadyEpoch(time.Now().Add(leaderWait))
	n.mu.Lock()
	if cur, ok := n.sessions[h.node]; ok {
		if h.epoch == cur.from.epoch && h.seq < cur.from.seq {
			// An older stream that arrived late: the newer one goes on.
			s.epoch = 0
		} else {
			cur.refusing.Store(true)
		}
	}
	if s.epoch != 0 {
		n.sessions[h.node] = s
	}
	n.mu.Unlock()
	return s
}

func (n *Node) closeSession(s *forwardSession) {
	s.refusing.Store(true)
	n.mu.Lock()
	if n.sessions[s.from.node] == s {
		delete(n.sessions, s.from.node)
	}
	n.mu.Unlock()
}

// takesForwardedLocked reports whether the leader may propose a write of
// session s now: s is its sender's newest stream and belongs to the
// current leadership.
func (n *Node) takesForwardedLocked(s *forwardSession) bool {
	if s.refusing.Load() || s.epoch != n.readyEpoch || n.sessions[s.from.node] != s {
		s.refusing.Store(true)
		return false
	}
	return true
}
