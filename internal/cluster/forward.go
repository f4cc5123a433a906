package cluster

import (
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

// leaderWait bounds how long a request waits for a leader while none is
// known or the known one does not answer: about an election and a half.
// Past it the request is answered "the state store is unavailable".
const leaderWait = 2 * time.Second

// forward sends a write to the leader and answers op with its result once
// this node has applied it too. While no leader is known, or the leader
// does not answer, it tries again until leaderWait has passed: a write
// sent twice is applied once (the log recognises it by client id and
// correlation data), so a client does not see an election that ends in
// time.
func (n *Node) forward(_ context.Context, op *engine.Op) bool {
	if !n.admit(op) {
		return true
	}
	// The request lives in the connection's read buffer, which its next
	// request reuses: the forwarded copy outlives this call.
	args := writeArgs(op)
	go func() {
		deadline := time.Now().Add(leaderWait)
		for {
			reply, err := n.writeOnLeader(args)
			if err == nil && reply.Err != wire.ErrUnavailable.Text() {
				op.Result = reply.result()
				n.fsm.afterApplied(reply.Index, func() { n.finish(op) }, func() {
					// Committed, but this node stops before its copy has
					// it: what the client may assume is unknown.
					op.Result = engine.Result{Err: wire.ErrUnavailable}
					n.finish(op)
				})
				return
			}
			if err != nil {
				n.log.Debug("forwarding to the leader failed", "err", err)
			}
			if time.Now().After(deadline) {
				op.Result = engine.Result{Err: wire.ErrUnavailable}
				n.finish(op)
				return
			}
			select {
			case <-time.After(20 * time.Millisecond):
			case <-n.stop:
				op.Result = engine.Result{Err: wire.ErrUnavailable}
				n.finish(op)
				return
			}
		}
	}()
	return false
}

// writeArgs copies op's request into the arguments of a forwarded write.
func writeArgs(op *engine.Op) *WriteArgs {
	r := &op.Request
	buf := make([]byte, 0, len(r.Key)+len(r.Value)+len(op.Correlation))
	buf = append(append(append(buf, r.Key...), r.Value...), op.Correlation...)
	k, v := len(r.Key), len(r.Key)+len(r.Value)
	return &WriteArgs{
		Verb: r.Verb, Key: buf[:k:k], Value: buf[k:v:v], Cond: r.Cond, PX: r.PX,
		Timestamp: op.Timestamp, HasTimestamp: op.HasTimestamp,
		Fence: op.Fence, HasFence: op.HasFence, Volatile: op.Volatile,
		Client: op.Client, Correlation: buf[v:],
	}
}

// writeOnLeader carries out a forwarded write: here if this node is the
// leader by now, else by a call to the leader. It blocks.
func (n *Node) writeOnLeader(args *WriteArgs) (*WriteReply, error) {
	reply := &WriteReply{}
	if n.isReady() {
		return reply, n.writeHere(args, reply)
	}
	addr := n.leaderAddr()
	if addr == "" {
		return nil, ErrNoLeader
	}
	c, err := n.peers.get(addr)
	if err != nil {
		return nil, err
	}
	call := c.Go("Cluster.Write", args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		if call.Error != nil {
			n.peers.failed(addr, call.Error)
			return nil, call.Error
		}
		return reply, nil
	case <-time.After(forwardTimeout):
		return nil, errForwardTimeout
	case <-n.stop:
		return nil, errClosed
	}
}

var errForwardTimeout = errors.New("cluster: the leader did not answer a forwarded write in time")

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

// Write carries out a forwarded write on the leader.
func (s *service) Write(args *WriteArgs, reply *WriteReply) error {
	if !s.n.isReady() {
		reply.Err = wire.ErrUnavailable.Text()
		return nil
	}
	return s.n.writeHere(args, reply)
}

// writeHere carries out a forwarded write on this node, the leader, and
// waits for its result.
func (n *Node) writeHere(args *WriteArgs, reply *WriteReply) error {
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
