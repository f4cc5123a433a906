package cluster

import (
	"bufio"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/wire"
)

// leaderWait bounds how long a request waits for a leader while none is
// known or the known one does not answer: about an election and a half.
// Past it the request is answered "the state store is unavailable".
const leaderWait = 2 * time.Second

// forwardDialTimeout bounds a connection to the leader for forwarding:
// a write waits leaderWait in all, and the cluster is on a LAN.
const forwardDialTimeout = 500 * time.Millisecond

// forwardRetry is the pause before a node forwards again after the
// leader refused its writes or could not be reached.
const forwardRetry = 10 * time.Millisecond

// answerWait bounds how long a write sent to the leader waits for its
// answer while that node stays the leader and its stream works: a large
// value on a slow disk may take seconds, and the leader answers its own
// clients however long its log takes; a leader that hangs is replaced
// by an election, which sends the write to the next one long before.
const answerWait = 10 * time.Second

// forwarder carries the writes that reach a node which does not lead to
// the leader, in the order they arrived, over one stream at a time:
// the leader submits them in that order, so that a client's writes are
// applied in the order it sent them, pipelined or not, while the writes
// of all clients share each network write and Raft entry.
//
// A write is answered once the leader has applied it (the client's
// reads on this node wait until this node has applied it too), or "the
// state store is unavailable" when no leader took it within leaderWait of its arrival (none was known, or none
// could be reached), or the leader it went to did not answer within
// answerWait. When the leader refuses writes (it lost
// its leadership), its stream breaks, or another node is elected, the
// forwarder sends every write not yet answered again, in order, on a new
// stream to the leader it knows then: the log recognises a write it
// already holds, and the leader's end of a stream applies a prefix of
// it (see forwardSession), so no write overtakes an earlier one.
type forwarder struct {
	n *Node

	mu        sync.Mutex
	queue     []*pendingWrite          // guarded by mu; in arrival order, answered ones dropped from the front
	byID      map[uint64]*pendingWrite // guarded by mu; the writes not yet answered
	cur       *forwardStream           // guarded by mu; the stream writes are sent on, nil when none
	streams   map[*forwardStream]bool  // guarded by mu; every stream whose reader runs
	retryAt   time.Time                // guarded by mu; no new stream before
	nextID    uint64                   // guarded by mu
	seq       uint64                   // guarded by mu; of the last stream opened
	unapplied []*unapplied             // guarded by mu; answered, not yet applied here (untilApplied), by deadline
	waiting   atomic.Int64             // writes not yet answered by the leader
	leaders   chan raft.Observation    // leader changes, from Raft
	obs       *raft.Observer           // registered while running
	wake      chan struct{}            // the queue or the leader changed
	wg        sync.WaitGroup           // stream readers
}

// pendingWrite is a write the forwarder holds until the leader answers.
type pendingWrite struct {
	id       uint64
	op       *engine.Op
	item     []byte    // the encoded write: a copy of everything it needs
	deadline time.Time // while not sent: its arrival and leaderWait
	sentAt   time.Time
	stream   *forwardStream // the stream it was last sent on; nil: to send
	answered bool
}

func newForwarder(n *Node) *forwarder {
	return &forwarder{
		n:       n,
		byID:    make(map[uint64]*pendingWrite),
		streams: make(map[*forwardStream]bool),
		leaders: make(chan raft.Observation, 1),
		wake:    make(chan struct{}, 1),
	}
}

// idle reports whether no forwarded write waits for the leader's answer:
// then a write this node takes itself cannot overtake one.
func (f *forwarder) idle() bool { return f.waiting.Load() == 0 }

// forward takes a write for the leader. It never blocks.
func (n *Node) forward(_ context.Context, op *engine.Op) bool {
	if !n.admit(op) {
		return true
	}
	f := n.fwd
	f.mu.Lock()
	f.nextID++
	w := &pendingWrite{id: f.nextID, op: op, deadline: time.Now().Add(leaderWait)}
	w.item = appendForwardedWrite(nil, w.id, op)
	f.queue = append(f.queue, w)
	f.byID[w.id] = w
	f.waiting.Add(1)
	f.mu.Unlock()
	n.order.begin(op.Client)
	f.signal()
	return false
}

func (f *forwarder) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// start registers for leader changes and starts the forwarding goroutine.
func (f *forwarder) start() {
	f.obs = raft.NewObserver(f.leaders, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	f.n.raft.RegisterObserver(f.obs)
	f.n.wg.Add(1)
	go f.run()
}

// run sends the queued writes to the leader until the node stops.
func (f *forwarder) run() {
	defer f.n.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-f.wake:
		case <-f.leaders:
		case <-timer.C:
		case <-f.n.stop:
			f.shutdown()
			return
		}
		next := f.step(time.Now())
		timer.Reset(next)
	}
}

// step answers the writes past their deadline, follows the leader, and
// sends what is to be sent. It returns when to look again.
func (f *forwarder) step(now time.Time) time.Duration {
	f.expire(now)
	unappliedNext := f.expireUnapplied(now)
	target, local := f.n.forwardTarget()
	f.mu.Lock()
	if f.cur != nil && (local || target != "") && (f.cur.target != target || f.cur.local != local) {
		// Another leader: what was sent to the old one goes to the new.
		// While none is known (an election, or a heartbeat late on a
		// loaded machine) the stream stays: its leader may still answer.
		f.dropLocked(f.cur)
	}
	var unsent []*pendingWrite
	for _, w := range f.queue {
		if !w.answered && w.stream == nil {
			unsent = append(unsent, w)
		}
	}
	cur, retryAt := f.cur, f.retryAt
	waiting := f.waiting.Load() > 0
	f.mu.Unlock()

	// Look again at the next deadline, and soon while writes wait: the
	// leader may change without a word to this node.
	next := time.Hour
	if waiting {
		next = 50 * time.Millisecond
	}
	if !unappliedNext.IsZero() {
		next = min(next, max(unappliedNext.Sub(now), time.Millisecond))
	}
	if len(unsent) == 0 {
		return next
	}
	if target == "" && !local || now.Before(retryAt) {
		return min(next, forwardRetry)
	}
	if cur == nil {
		var err error
		if cur, err = f.open(target, local); err != nil {
			f.n.log.Debug("forwarding: no stream to the leader", "leader", target, "err", err)
			f.mu.Lock()
			f.retryAt = time.Now().Add(forwardRetry)
			f.mu.Unlock()
			return forwardRetry
		}
	}
	f.send(cur, unsent)
	return next
}

// send sends the writes on s, in order.
func (f *forwarder) send(s *forwardStream, ws []*pendingWrite) {
	f.mu.Lock()
	if f.cur != s {
		// Dropped meanwhile (a refusal came): the next step sends again.
		f.mu.Unlock()
		f.signal()
		return
	}
	now := time.Now()
	for _, w := range ws {
		if !w.answered {
			w.stream, w.sentAt = s, now
		}
	}
	f.mu.Unlock()
	for _, w := range ws {
		if s.local {
			d := newDecoder(w.item)
			fw := decodeForwardedWrite(&d)
			s.session.submit(&fw)
			continue
		}
		item := w.item
		s.out.append(func(b []byte) []byte { return append(b, item...) })
	}
}

// open starts a stream to the leader: a connection to target, or this
// node's own engine once it leads.
func (f *forwarder) open(target string, local bool) (*forwardStream, error) {
	f.mu.Lock()
	f.seq++
	h := forwardHeader{node: f.n.cfg.NodeID, epoch: f.n.epoch, seq: f.seq}
	f.mu.Unlock()
	s := &forwardStream{target: target, local: local}
	if local {
		epoch := f.n.currentReadyEpoch()
		s.session = &forwardSession{n: f.n, from: h, epoch: epoch, sink: func(r forwardResult) { f.result(s, r) }}
		f.n.mu.Lock()
		f.n.sessions[h.node] = s.session
		f.n.mu.Unlock()
	} else {
		c, err := f.n.mux.dial(target, connForward, forwardDialTimeout)
		if err != nil {
			return nil, err
		}
		_ = c.SetWriteDeadline(time.Now().Add(leaderWait / 4))
		if _, err := c.Write(appendForwardHeader(nil, h)); err != nil {
			c.Close()
			return nil, err
		}
		s.conn = c
		s.out = newFrameWriter(c, answerWait, func(err error) { f.broken(s, err) })
	}
	f.mu.Lock()
	if f.cur != nil {
		f.dropLocked(f.cur)
	}
	f.cur = s
	if !local {
		f.streams[s] = true
		f.wg.Add(2)
		go f.read(s)
		go func() {
			defer f.wg.Done()
			s.out.run()
		}()
	}
	f.mu.Unlock()
	return s, nil
}

// read takes the leader's results from s until the stream ends.
func (f *forwarder) read(s *forwardStream) {
	defer f.wg.Done()
	br := bufio.NewReaderSize(s.conn, 32<<10)
	for {
		d, count, err := readFrame(br)
		if err != nil {
			f.broken(s, err)
			break
		}
		for range count {
			r := decodeForwardResult(d)
			if d.Err() != nil {
				f.broken(s, d.Err())
				break
			}
			f.result(s, r)
		}
	}
	f.mu.Lock()
	delete(f.streams, s)
	f.mu.Unlock()
}

// result handles the leader's answer to a write sent on s.
func (f *forwarder) result(s *forwardStream, r forwardResult) {
	f.mu.Lock()
	w := f.byID[r.id]
	if w == nil || w.stream != s {
		// Answered already, or sent again on a newer stream since.
		f.mu.Unlock()
		return
	}
	if r.unavailable() {
		// The leader takes no more writes of this stream: everything sent
		// on it and not answered goes again, from this write on.
		f.dropLocked(s)
		f.retryAt = time.Now().Add(forwardRetry)
		f.mu.Unlock()
		f.signal()
		return
	}
	f.answerLocked(w)
	f.mu.Unlock()
	// The leader applied the write, so it is committed: the client is
	// answered now, not once this node learns of the commit from the
	// leader's next message (up to a few milliseconds later, while the
	// client could not send its next write). The client's reads on this
	// node wait until its copy has applied the write too, so that a
	// read sent after the answer, stale or not, sees it.
	client := w.op.Client
	w.op.Result = r.result()
	f.n.finish(w.op)
	f.untilApplied(client, r.index)
}

// untilApplied holds the reads of client on this node until its machine
// has applied the entry at index, or leaderWait has passed: a node that
// lost the majority just after the leader's answer may never learn that
// the entry was committed, and its reads then go on (a linearizable one
// is answered "unavailable" when no leader confirms a read index; a
// stale one reads the copy as it is).
func (f *forwarder) untilApplied(client string, index uint64) {
	if f.n.fsm.applied.Load() >= index {
		f.n.order.end(client)
		return
	}
	u := &unapplied{client: client, deadline: time.Now().Add(leaderWait)}
	f.mu.Lock()
	first := len(f.unapplied) == 0
	f.unapplied = append(f.unapplied, u)
	f.mu.Unlock()
	if first {
		// run's timer may be far off: it looks again by this deadline,
		// and by the earliest one each time it looks.
		f.signal()
	}
	end := func() { f.endUnapplied(u) }
	f.n.fsm.afterApplied(index, end, end)
}

// unapplied is a write the leader answered and this node has not applied.
type unapplied struct {
	client   string
	deadline time.Time
	ended    atomic.Bool
}

// endUnapplied lets the reads of u's client go on, once.
func (f *forwarder) endUnapplied(u *unapplied) {
	if u.ended.CompareAndSwap(false, true) {
		f.n.order.end(u.client)
	}
}

// expireUnapplied ends the waits of untilApplied past their deadline and
// forgets those that ended. It returns the next deadline, or the zero
// time when none waits.
func (f *forwarder) expireUnapplied(now time.Time) time.Time {
	var late []*unapplied
	var next time.Time
	f.mu.Lock()
	kept := f.unapplied[:0]
	for _, u := range f.unapplied {
		switch {
		case u.ended.Load():
		case !now.Before(u.deadline):
			late = append(late, u)
		default:
			kept = append(kept, u)
			if next.IsZero() {
				next = u.deadline // in the order of their deadlines
			}
		}
	}
	clear(f.unapplied[len(kept):])
	f.unapplied = kept
	f.mu.Unlock()
	for _, u := range late {
		f.endUnapplied(u)
	}
	return next
}

// broken drops s after its connection failed.
func (f *forwarder) broken(s *forwardStream, err error) {
	f.mu.Lock()
	if f.cur == s {
		f.n.log.Debug("forwarding stream to the leader broke", "leader", s.target, "err", err)
		f.dropLocked(s)
	}
	f.mu.Unlock()
	f.signal()
}

// dropLocked ends stream s: the writes sent on it and not answered are
// sent again on the next stream.
func (f *forwarder) dropLocked(s *forwardStream) {
	if f.cur == s {
		f.cur = nil
	}
	for _, w := range f.queue {
		if w.stream == s && !w.answered {
			w.stream = nil
		}
	}
	s.close(f.n)
}

// answerLocked takes w out of the queue: it is answered.
func (f *forwarder) answerLocked(w *pendingWrite) {
	w.answered = true
	delete(f.byID, w.id)
	f.waiting.Add(-1)
	i := 0
	for i < len(f.queue) && f.queue[i].answered {
		f.queue[i] = nil
		i++
	}
	if i > 0 {
		f.queue = append(f.queue[:0], f.queue[i:]...)
	}
}

// expire answers "the state store is unavailable" to the writes that no
// leader took within leaderWait of their arrival, and to those the leader
// did not answer within answerWait.
func (f *forwarder) expire(now time.Time) {
	var late []*pendingWrite
	f.mu.Lock()
	for _, w := range f.queue {
		if !w.answered && (w.stream == nil && !now.Before(w.deadline) || w.stream != nil && now.Sub(w.sentAt) >= answerWait) {
			late = append(late, w)
		}
	}
	due := make([]*engine.Op, len(late))
	for i, w := range late {
		due[i] = w.op
		f.answerLocked(w)
	}
	f.mu.Unlock()
	for _, op := range due {
		op.Result = engine.Result{Err: wire.ErrUnavailable}
		f.done(op)
	}
}

// shutdown answers every write still waiting and ends the streams; the
// node is stopping.
func (f *forwarder) shutdown() {
	f.n.raft.DeregisterObserver(f.obs)
	var due []*engine.Op
	f.mu.Lock()
	for _, w := range f.queue {
		if !w.answered {
			due = append(due, w.op)
			w.answered = true
		}
	}
	f.queue, f.byID = nil, map[uint64]*pendingWrite{}
	f.waiting.Store(0)
	if f.cur != nil {
		f.dropLocked(f.cur)
	}
	for s := range f.streams {
		s.close(f.n)
	}
	f.mu.Unlock()
	f.wg.Wait()
	for _, op := range due {
		op.Result = engine.Result{Err: wire.ErrUnavailable}
		f.done(op)
	}
}

// done answers a forwarded write the leader did not answer; the client's
// reads that waited for it go on.
func (f *forwarder) done(op *engine.Op) {
	client := op.Client
	f.n.finish(op)
	f.n.order.end(client)
}

// forwardStream is one stream of writes to the leader: a connection, or
// a session on this node's own engine when it leads.
type forwardStream struct {
	target  string
	local   bool
	conn    net.Conn        // remote
	out     *frameWriter    // remote: writes conn
	session *forwardSession // local
	once    sync.Once
}

func (s *forwardStream) close(n *Node) {
	s.once.Do(func() {
		if s.conn != nil {
			s.out.close()
			s.conn.Close()
		}
		if s.session != nil {
			n.closeSession(s.session)
		}
	})
}

// forwardTarget says where forwarded writes go now: to this node's own
// engine (local) once it leads and has started its term, to the address
// of the leader, or nowhere ("", false) while none is known.
func (n *Node) forwardTarget() (string, bool) {
	if n.isReady() {
		return "", true
	}
	return n.leaderAddr(), false
}
