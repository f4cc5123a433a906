package cluster

import (
	"context"
	"errors"
	"net/rpc"
	"sync"
	"time"
)

// dialTimeout bounds the connection to another node.
const dialTimeout = 2 * time.Second

// errClosed answers calls after the node closed.
var errClosed = errors.New("cluster: closed")

// peerClients keeps one RPC connection to each node this node calls: the
// leader for forwarded requests and read indexes, every member for status.
// Calls on one connection are multiplexed (net/rpc).
type peerClients struct {
	m *mux

	mu      sync.Mutex
	clients map[string]*rpc.Client // guarded by mu; by address
	closed  bool                   // guarded by mu
}

func newPeerClients(m *mux) *peerClients {
	return &peerClients{m: m, clients: make(map[string]*rpc.Client)}
}

// get returns the client for addr, connecting when there is none.
func (p *peerClients) get(addr string) (*rpc.Client, error) {
	c, _, err := p.getFresh(addr)
	return c, err
}

// getFresh is get, and says whether the connection is a new one.
func (p *peerClients) getFresh(addr string) (*rpc.Client, bool, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, errClosed
	}
	if c, ok := p.clients[addr]; ok {
		p.mu.Unlock()
		return c, false, nil
	}
	p.mu.Unlock()
	conn, err := p.m.dial(addr, connRPC, dialTimeout)
	if err != nil {
		return nil, false, err
	}
	c := rpc.NewClient(conn)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return nil, false, errClosed
	}
	if old, ok := p.clients[addr]; ok {
		c.Close()
		return old, false, nil
	}
	p.clients[addr] = c
	return c, true, nil
}

// do calls method on addr and waits for the answer or ctx. A call that
// fails on a connection made before (the peer restarted since, or the
// connection broke) is made once more on a new connection, so that a
// peer that is back answers the first call.
func (p *peerClients) do(ctx context.Context, addr, method string, args, reply any) error {
	for retried := false; ; retried = true {
		c, fresh, err := p.getFresh(addr)
		if err != nil {
			return err
		}
		call := c.Go(method, args, reply, make(chan *rpc.Call, 1))
		select {
		case <-call.Done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if call.Error == nil || isServerError(call.Error) {
			return call.Error
		}
		p.drop(addr, c)
		if fresh || retried {
			return call.Error
		}
	}
}

// drop forgets the client for addr after its connection failed.
func (p *peerClients) drop(addr string, c *rpc.Client) {
	p.mu.Lock()
	if p.clients[addr] == c {
		delete(p.clients, addr)
	}
	p.mu.Unlock()
	c.Close()
}

// call starts an asynchronous call to addr; done receives it. It dials
// when there is no connection yet, and so may block for dialTimeout.
func (p *peerClients) call(addr, method string, args, reply any, done chan *rpc.Call) {
	c, err := p.get(addr)
	if err != nil {
		done <- &rpc.Call{ServiceMethod: method, Args: args, Reply: reply, Error: err, Done: done}
		return
	}
	c.Go(method, args, reply, done)
}

// failed handles the error of a call to addr: a connection that broke is
// dropped so that the next call dials again.
func (p *peerClients) failed(addr string, err error) {
	if errors.Is(err, rpc.ErrShutdown) || !isServerError(err) {
		p.mu.Lock()
		c := p.clients[addr]
		p.mu.Unlock()
		if c != nil {
			p.drop(addr, c)
		}
	}
}

func isServerError(err error) bool {
	var se rpc.ServerError
	return errors.As(err, &se)
}

func (p *peerClients) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for addr, c := range p.clients {
		c.Close()
		delete(p.clients, addr)
	}
}
