package dsstest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy relays TCP connections to a server. Hang makes it swallow every
// byte in both directions while the connections stay open, as a server
// that hangs (a stopped process, a machine gone without a word) looks to
// its clients.
type Proxy struct {
	ln     net.Listener
	target string
	hung   atomic.Bool

	mu    sync.Mutex
	conns map[net.Conn]struct{} // guarded by mu
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to target on a random loopback port; it stops
// when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Hang swallows every byte from now on (true), or relays again (false).
func (p *Proxy) Hang(hung bool) { p.hung.Store(hung) }

// Reset ends every connection the proxy relays, as peers that timed out
// would; new ones are relayed.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.relay(c, s)
		go p.relay(s, c)
	}
}

// relay copies from src to dst until either closes, dropping what it
// reads while the proxy hangs.
func (p *Proxy) relay(src, dst net.Conn) {
	defer p.wg.Done()
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.hung.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
