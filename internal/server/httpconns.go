package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// httpConns bounds the connections the HTTP endpoint holds, so that
// however many clients come to it (scrapers, health checks, or a flood
// of idle keep-alive connections), it holds at most max descriptors (and
// one more, accepted, that waits for room) and the MQTT listeners keep
// the rest. At the bound, a new connection closes the connection idle
// the longest between two requests to take its place; when none is
// idle, it waits until one ends, and the connections after it wait in
// the listen backlog (a request's headers must come within the server's
// ReadHeaderTimeout, so the wait is bounded).
//
// Its Listen wraps the HTTP listener; its track is the http.Server's
// ConnState.
type httpConns struct {
	max  int
	mu   sync.Mutex
	open int                    // guarded by mu: connections accepted and not yet closed
	idle map[net.Conn]time.Time // guarded by mu: the idle ones, since when
	// freed has a token when a connection closed: an Accept that waits
	// for room looks again.
	freed chan struct{}
}

func newHTTPConns(max int) *httpConns {
	return &httpConns{max: max, idle: map[net.Conn]time.Time{}, freed: make(chan struct{}, 1)}
}

// limitedListener is a listener whose Accept waits for room in conns.
type limitedListener struct {
	net.Listener
	conns *httpConns
	done  chan struct{}
	once  sync.Once
}

// Listen returns ln, bounded by c.
func (c *httpConns) Listen(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, conns: c, done: make(chan struct{})}
}

// Accept accepts a connection and returns it once there is room for it.
// Room is not taken before a connection comes: that would close an idle
// connection for one that may never come.
func (l *limitedListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := l.conns.acquire(l.done); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return &countedConn{Conn: conn, conns: l.conns}, nil
}

func (l *limitedListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// acquire takes room for one more connection, closing the connection
// idle the longest if there is none, or waiting for one to close.
func (c *httpConns) acquire(done chan struct{}) error {
	for {
		c.mu.Lock()
		if c.open < c.max {
			c.open++
			c.mu.Unlock()
			return nil
		}
		oldest := c.oldestIdleLocked()
		c.mu.Unlock()
		if oldest != nil {
			_ = oldest.Close() // its server goroutine ends, and releases
		}
		select {
		case <-c.freed:
		case <-done:
			return net.ErrClosed
		}
	}
}

func (c *httpConns) oldestIdleLocked() net.Conn {
	var oldest net.Conn
	var since time.Time
	for conn, t := range c.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = conn, t
		}
	}
	if oldest != nil {
		delete(c.idle, oldest) // closed once
	}
	return oldest
}

func (c *httpConns) release() {
	c.mu.Lock()
	c.open--
	c.mu.Unlock()
	select {
	case c.freed <- struct{}{}:
	default:
	}
}

// track follows the state of the server's connections: an idle one may
// be closed to make room.
func (c *httpConns) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch state {
	case http.StateIdle:
		c.idle[conn] = time.Now()
	default:
		delete(c.idle, conn)
	}
}

// countedConn gives its room back when it is closed, once.
type countedConn struct {
	net.Conn
	conns *httpConns
	once  sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.conns.mu.Lock()
		delete(c.conns.idle, net.Conn(c))
		c.conns.mu.Unlock()
		c.conns.release()
	})
	return err
}
