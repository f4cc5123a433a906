package cluster

import (
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
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
	}
	if c, ok := p.clients[addr]; ok {
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	conn, err := p.m.dial(addr, connRPC, dialTimeout)
	if err != nil {
		return nil, err
	}
	c := rpc.NewClient(conn)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return nil, errClosed
	}
	if old, ok := p.clients[addr]; ok {
		c.Close()
		return old, nil
	}
	p.clients[addr] = c
	return c, nil
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
