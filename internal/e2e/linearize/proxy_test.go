package linearize

import (
	"errors"
	"net"
	"sync"
	"time"
)

// proxy forwards the TCP connections made to its listener to a target
// address, and injects network faults into them: each direction can be
// held (its bytes are kept back, as a network partition keeps back
// packets that TCP sends again once it heals) or delayed, and all its
// connections can be reset. Forward is from the side that dialled to the
// target; back is the other way.
type proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	changed *sync.Cond          // signalled when held, delay or closed change
	held    [2]bool             // guarded by mu; by direction
	delay   time.Duration       // guarded by mu; added to every chunk, both ways
	conns   map[*proxyConn]bool // guarded by mu
	closed  bool                // guarded by mu
	wg      sync.WaitGroup
}

// The directions of a proxy.
const (
	forward = 0
	back    = 1
)

// proxyConn is one forwarded connection: the accepted side and the
// dialled side.
type proxyConn struct {
	in, out net.Conn
	once    sync.Once
}

func (c *proxyConn) close() {
	c.once.Do(func() {
		c.in.Close()
		c.out.Close()
	})
}

// newProxy listens on a free loopback port and forwards to target.
func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[*proxyConn]bool{}}
	p.changed = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// addr is the address to dial instead of the target.
func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			// The target is down: the dialler sees the connection
			// close, as it would see it refused.
			in.Close()
			continue
		}
		c := &proxyConn{in: in, out: out}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.close()
			return
		}
		p.conns[c] = true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, in, out, forward)
		go p.pipe(c, out, in, back)
	}
}

// chunk is bytes read from one side, with the time they were read.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies from src to dst in direction dir, keeping bytes back while
// the direction is held and for the delay. Either side's end ends the
// connection.
func (p *proxy) pipe(c *proxyConn, src, dst net.Conn, dir int) {
	defer p.wg.Done()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	// The reader runs ahead of the writer, so that a delay delays each
	// chunk rather than throttling the stream; the queue's bound is the
	// backpressure that a held direction puts on the sender.
	queue := make(chan chunk, 64)
	go func() {
		defer close(queue)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				queue <- chunk{b[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		// Unblock the reader: closing src ends its Read, and the queue
		// is drained so that it is never stuck on a send.
		c.close()
		for range queue {
		}
	}()
	for ch := range queue {
		if !p.wait(dir, ch.at) {
			return
		}
		if _, err := dst.Write(ch.b); err != nil {
			return
		}
	}
	// The source ended: its end reaches the other side when its bytes
	// would.
	p.wait(dir, time.Now())
}

// wait blocks while dir is held and until the delay after at has passed.
// It reports false when the proxy closed.
func (p *proxy) wait(dir int, at time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.closed {
			return false
		}
		if p.held[dir] {
			p.changed.Wait()
			continue
		}
		d := time.Until(at.Add(p.delay))
		if d <= 0 {
			return true
		}
		// Sleep without the lock, then look again: the delay or the
		// hold may have changed meanwhile.
		p.mu.Unlock()
		time.Sleep(min(d, 50*time.Millisecond))
		p.mu.Lock()
	}
}

// hold keeps back (true) or lets through (false) the bytes of direction
// dir.
func (p *proxy) hold(dir int, held bool) {
	p.mu.Lock()
	p.held[dir] = held
	p.mu.Unlock()
	p.changed.Broadcast()
}

// setDelay delays every chunk by d in both directions.
func (p *proxy) setDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
	p.changed.Broadcast()
}

// reset closes every connection, as a peer that timed out or a reset
// would; new ones are accepted.
func (p *proxy) reset() {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// heal lets everything through without delay.
func (p *proxy) heal() {
	p.mu.Lock()
	p.held = [2]bool{}
	p.delay = 0
	p.mu.Unlock()
	p.changed.Broadcast()
}

// close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *proxy) close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.changed.Broadcast()
	p.reset()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
