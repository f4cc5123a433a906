package dsstest

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// wsClientConn is the client side of an MQTT over WebSocket connection as
// a net.Conn whose read deadlines end a wait without ending the
// connection, as a TCP connection's do (websocket.NetConn closes the
// connection when a read deadline passes): tests wait for a packet that
// must not come and go on reading. A goroutine reads the messages into a
// buffer; Write sends one binary message.
type wsClientConn struct {
	ws *websocket.Conn

	mu       sync.Mutex
	buf      []byte        // guarded by mu
	err      error         // guarded by mu; the end of the stream once buf is read
	more     chan struct{} // signalled when buf grows or err is set
	deadline time.Time     // guarded by mu
	changed  chan struct{} // signalled when the deadline changes
	done     chan struct{} // closed when the reading goroutine ends
}

func newWSClientConn(ws *websocket.Conn) *wsClientConn {
	ws.SetReadLimit(-1)
	c := &wsClientConn{ws: ws, more: make(chan struct{}, 1), changed: make(chan struct{}, 1), done: make(chan struct{})}
	go c.pump()
	return c
}

func (c *wsClientConn) pump() {
	defer close(c.done)
	for {
		typ, p, err := c.ws.Read(context.Background())
		if err == nil && typ != websocket.MessageBinary {
			err = errors.New("websocket: the server sent a text message")
		}
		c.mu.Lock()
		if err != nil {
			switch websocket.CloseStatus(err) {
			case websocket.StatusNormalClosure, websocket.StatusGoingAway:
				err = io.EOF
			}
			c.err = err
		} else {
			c.buf = append(c.buf, p...)
		}
		c.mu.Unlock()
		signal(c.more)
		if err != nil {
			return
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *wsClientConn) Read(p []byte) (int, error) {
	for {
		c.mu.Lock()
		if len(c.buf) > 0 {
			n := copy(p, c.buf)
			c.buf = c.buf[n:]
			c.mu.Unlock()
			return n, nil
		}
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return 0, err
		}
		var timeout <-chan time.Time
		if !c.deadline.IsZero() {
			d := time.Until(c.deadline)
			if d <= 0 {
				c.mu.Unlock()
				return 0, os.ErrDeadlineExceeded
			}
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		c.mu.Unlock()
		select {
		case <-c.more:
		case <-c.changed:
		case <-timeout:
		}
	}
}

func (c *wsClientConn) Write(p []byte) (int, error) {
	if err := c.ws.Write(context.Background(), websocket.MessageBinary, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close closes the connection with a WebSocket close (1000), waiting at
// most a second for the server's answer.
func (c *wsClientConn) Close() error {
	t := time.AfterFunc(time.Second, func() { _ = c.ws.CloseNow() })
	defer t.Stop()
	err := c.ws.Close(websocket.StatusNormalClosure, "")
	<-c.done
	return err
}

func (c *wsClientConn) LocalAddr() net.Addr  { return wsAddr{} }
func (c *wsClientConn) RemoteAddr() net.Addr { return wsAddr{} }

func (c *wsClientConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *wsClientConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	signal(c.changed)
	return nil
}

func (c *wsClientConn) SetWriteDeadline(time.Time) error { return nil }

type wsAddr struct{}

func (wsAddr) Network() string { return "websocket" }
func (wsAddr) String() string  { return "websocket" }
