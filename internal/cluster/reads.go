package cluster

import (
	"bytes"
	"context"
	"errors"
	"net/rpc"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/wire"
)

// readIndexTimeout bounds how long a follower waits for the leader's read
// index.
const readIndexTimeout = 2 * time.Second

// reader confirms read indexes in batches: every read that arrives while
// one confirmation is under way shares the next one. On the leader a
// confirmation is the commit index followed by one heartbeat round to a
// majority (VerifyLeader); on a follower it is one call to the leader,
// which confirms it there.
type reader struct {
	n *Node

	mu      sync.Mutex
	waiting []func(uint64, error) // guarded by mu
	closed  bool                  // guarded by mu

	wake chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
}

func newReader(n *Node) *reader {
	return &reader{n: n, wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (r *reader) start() {
	r.wg.Add(1)
	go r.loop()
}

// confirm calls fn with a read index, or the reason there is none, once
// a confirmation that started after this call completes. fn must not
// block.
func (r *reader) confirm(fn func(uint64, error)) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		fn(0, errClosed)
		return
	}
	r.waiting = append(r.waiting, fn)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reader) loop() {
	defer r.wg.Done()
	for {
		select {
		case <-r.wake:
		case <-r.stop:
			return
		}
		r.mu.Lock()
		batch := r.waiting
		r.waiting = nil
		r.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		index, err := r.readIndex()
		for _, fn := range batch {
			fn(index, err)
		}
	}
}

// readIndex confirms a read index now. While no leader is known, or the
// leader does not confirm, it tries again until leaderWait has passed.
func (r *reader) readIndex() (uint64, error) {
	deadline := time.Now().Add(leaderWait)
	for {
		index, err := r.readIndexOnce()
		if err == nil || errors.Is(err, errClosed) || time.Now().After(deadline) {
			return index, err
		}
		r.n.log.Debug("read index not confirmed; trying again", "err", err)
		select {
		case <-time.After(20 * time.Millisecond):
		case <-r.stop:
			return 0, errClosed
		}
	}
}

func (r *reader) readIndexOnce() (uint64, error) {
	n := r.n
	if n.isReady() {
		// The term-start entry is applied, so the commit index is of this
		// term; read it before the heartbeat round, so that every write
		// acknowledged before the read began is at or below it.
		index := n.raft.CommitIndex()
		if err := n.raft.VerifyLeader().Error(); err != nil {
			return 0, err
		}
		return index, nil
	}
	addr := n.leaderAddr()
	if addr == "" {
		return 0, ErrNoLeader
	}
	var index uint64
	done := make(chan *rpc.Call, 1)
	n.peers.call(addr, "Cluster.ReadIndex", &ReadIndexArgs{}, &index, done)
	select {
	case call := <-done:
		if call.Error != nil {
			n.peers.failed(addr, call.Error)
			return 0, call.Error
		}
		return index, nil
	case <-time.After(readIndexTimeout):
		return 0, raft.ErrEnqueueTimeout
	case <-r.stop:
		return 0, errClosed
	}
}

func (r *reader) close() {
	r.mu.Lock()
	r.closed = true
	batch := r.waiting
	r.waiting = nil
	r.mu.Unlock()
	close(r.stop)
	r.wg.Wait()
	for _, fn := range batch {
		fn(0, errClosed)
	}
}

// read answers a linearizable GET or SCAN page: once a read index is
// confirmed and this node's machine has applied it, the request reads the
// machine.
func (n *Node) read(_ context.Context, op *engine.Op) bool {
	if !n.admit(op) {
		return true
	}
	keepRequest(op)
	if n.order.after(op.Client, func() { n.readNow(op) }) {
		// A write the client sent before is under way: the read starts
		// once it is answered, and so sees it.
		return false
	}
	n.readNow(op)
	return false
}

// readNow confirms a read index for op and reads once this node's machine
// has applied it.
func (n *Node) readNow(op *engine.Op) {
	n.reads.confirm(func(index uint64, err error) {
		if err != nil {
			n.log.Debug("read index not confirmed", "err", err)
			op.Result = engine.Result{Err: wire.ErrUnavailable}
			n.finish(op)
			return
		}
		n.fsm.afterApplied(index, func() {
			n.inflight.Add(-1)
			n.engine.Read(op)
		}, func() {
			op.Result = engine.Result{Err: wire.ErrUnavailable}
			n.finish(op)
		})
	})
}

// readStale answers a stale GET or SCAN page from this node's machine as
// it is, once the writes the client sent through this node before it have
// been applied here: a client reads its own writes, stale or not.
func (n *Node) readStale(ctx context.Context, op *engine.Op) bool {
	if !n.order.pending(op.Client) {
		return n.engine.Submit(ctx, op)
	}
	keepRequest(op)
	read := func() { n.engine.Read(op) }
	if n.order.after(op.Client, func() {
		// The write is answered, or applied here, as its entry is
		// applied: the read waits for the end of that entry. A node that
		// stops first answers from what it holds, as a stale read may.
		n.fsm.afterApplied(n.fsm.applying.Load(), read, read)
	}) {
		return false
	}
	return n.engine.Submit(ctx, op)
}

// keepRequest copies what a read refers to out of the connection's read
// buffer, which the connection's next request reuses: for a read that
// outlives the call that took it.
func keepRequest(op *engine.Op) {
	op.Request.Key = bytes.Clone(op.Request.Key)
	op.Request.Token = bytes.Clone(op.Request.Token) // a SCAN's
}
