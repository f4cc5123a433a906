package cluster

import (
	"bytes"
	"context"
	"errors"
	"net/rpc"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

// forwardTimeout bounds how long the leader works on a forwarded request.
const forwardTimeout = 5 * time.Second

// WriteArgs is a write forwarded from a follower to the leader: the
// request as the client sent it, so that the leader decides its time and
// version.
type WriteArgs struct {
	Verb         wire.Verb
	Key, Value   []byte
	Cond         wire.Condition
	PX           int64
	Timestamp    hlc.Timestamp
	HasTimestamp bool
	Fence        hlc.Timestamp
	HasFence     bool
	Volatile     bool
	Client       string
	Correlation  []byte
}

// WriteReply is the leader's answer: the result, and the index at which
// the write was applied, which the follower waits for before it answers
// its client.
type WriteReply struct {
	Err        string // protocol error text; "" for none
	Outcome    store.Outcome
	Version    hlc.Timestamp
	HasVersion bool
	Index      uint64
}

// forward sends a write to the leader and answers op with its result once
// this node has applied it too.
func (n *Node) forward(_ context.Context, op *engine.Op) bool {
	addr := n.leaderAddr()
	if addr == "" {
		return answerNow(op, wire.ErrUnavailable)
	}
	if !n.admit(op) {
		return true
	}
	r := &op.Request
	args := &WriteArgs{
		Verb: r.Verb, Key: r.Key, Value: r.Value, Cond: r.Cond, PX: r.PX,
		Timestamp: op.Timestamp, HasTimestamp: op.HasTimestamp,
		Fence: op.Fence, HasFence: op.HasFence, Volatile: op.Volatile,
		Client: op.Client, Correlation: op.Correlation,
	}
	reply := &WriteReply{}
	done := make(chan *rpc.Call, 1)
	if c := n.peers.connected(addr); c != nil {
		// net/rpc encodes the arguments before Go returns: the request's
		// memory, which the connection's next request reuses, may go.
		c.Go("Cluster.Write", args, reply, done)
	} else {
		// Dialing blocks: not on the goroutine that reads the client.
		args.Key, args.Value = bytes.Clone(args.Key), bytes.Clone(args.Value)
		args.Correlation = bytes.Clone(args.Correlation)
		go n.peers.call(addr, "Cluster.Write", args, reply, done)
	}
	go func() {
		call := <-done
		if call.Error != nil {
			n.peers.failed(addr, call.Error)
			n.log.Debug("forwarding to the leader failed", "leader", addr, "err", call.Error)
			op.Result = engine.Result{Err: wire.ErrUnavailable}
			n.finish(op)
			return
		}
		op.Result = reply.result()
		n.fsm.afterApplied(reply.Index, func() { n.finish(op) })
	}()
	return false
}

func (r *WriteReply) result() engine.Result {
	res := engine.Result{Outcome: r.Outcome, Version: r.Version, HasVersion: r.HasVersion}
	if r.Err != "" {
		if res.Err = wire.ErrorByText(r.Err); res.Err == nil {
			res.Err = wire.ErrUnavailable
		}
	}
	return res
}

// service is the RPC service of the cluster listener.
type service struct{ n *Node }

// errNotLeader answers a forwarded call that reached a node that is not
// (or no longer) the leader.
var errNotLeader = errors.New("not the leader")

// Write carries out a forwarded write on the leader.
func (s *service) Write(args *WriteArgs, reply *WriteReply) error {
	n := s.n
	if !n.isReady() {
		reply.Err = wire.ErrUnavailable.Text()
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
	defer cancel()
	done := make(chan struct{})
	op := &engine.Op{
		Request:   wire.Request{Verb: args.Verb, Key: args.Key, Value: args.Value, Cond: args.Cond, PX: args.PX},
		Timestamp: args.Timestamp, HasTimestamp: args.HasTimestamp,
		Fence: args.Fence, HasFence: args.HasFence, Volatile: args.Volatile,
		Client: args.Client, Correlation: args.Correlation,
		Done: func(*engine.Op) { close(done) },
	}
	n.engine.Submit(ctx, op)
	select {
	case <-done:
	case <-n.stop:
		return errClosed
	}
	res := &op.Result
	if res.Err != nil {
		reply.Err = res.Err.Text()
	}
	reply.Outcome, reply.Version, reply.HasVersion = res.Outcome, res.Version, res.HasVersion
	reply.Index = n.fsm.applied.Load()
	return nil
}

// ReadIndexArgs asks the leader for a read index.
type ReadIndexArgs struct{}

// ReadIndex returns an index that a read started now may be served at on
// any node whose machine has applied it: the leader's commit index,
// confirmed by a majority.
func (s *service) ReadIndex(_ *ReadIndexArgs, index *uint64) error {
	ch := make(chan readIndexResult, 1)
	s.n.reads.confirm(func(i uint64, err error) { ch <- readIndexResult{i, err} })
	select {
	case r := <-ch:
		*index = r.index
		return r.err
	case <-s.n.stop:
		return errClosed
	}
}

type readIndexResult struct {
	index uint64
	err   error
}
