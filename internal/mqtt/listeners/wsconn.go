package listeners

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// errTextMessage ends a connection that sent a text message: MQTT over
// WebSocket is carried in binary messages [MQTT-6.0.0-1].
var errTextMessage = errors.New("websocket: a text message; MQTT over WebSocket takes binary messages only")

// wsConn is an upgraded WebSocket connection as the core sees it: the
// byte stream of the binary messages it receives, and a binary message
// for each write.
//
// The core uses a read deadline to wake its reader without ending the
// connection (after it sent a DISCONNECT, it reads what the client still
// sends until the client closes). The WebSocket library can interrupt a
// read only by closing the connection, so a goroutine of the connection
// (pump) reads the messages and hands their bytes to Read, whose
// deadlines end a wait and nothing else, as a TCP connection's do. It
// hands over one piece at a time and waits until Read has taken it, so a
// connection that the core does not read is not read from the network
// either (the back-pressure of the core's read gate).
type wsConn struct {
	l   *WebSocket
	ws  *websocket.Conn
	raw net.Conn             // the accepted connection it runs over
	tls *tls.ConnectionState // nil without TLS

	in       chan []byte   // a piece of a message, from pump
	consumed chan struct{} // Read took all of the last piece
	pumped   chan struct{} // closed when pump ends; readErr is set then
	readErr  error
	closed   chan struct{} // closed by Close
	close    sync.Once

	readMu  sync.Mutex
	pending []byte // guarded by readMu
	readDL  *connDeadline
	writeDL *connDeadline
}

func newWSConn(l *WebSocket, ws *websocket.Conn, raw net.Conn, st *tls.ConnectionState) *wsConn {
	// The core bounds packets (--max-packet-size) in the byte stream;
	// messages are streamed through, never held whole.
	ws.SetReadLimit(-1)
	c := &wsConn{
		l: l, ws: ws, raw: raw,
		in:       make(chan []byte),
		consumed: make(chan struct{}, 1),
		pumped:   make(chan struct{}),
		closed:   make(chan struct{}),
		readDL:   newConnDeadline(),
		writeDL:  newConnDeadline(),
	}
	if st != nil {
		s := *st
		c.tls = &s
	}
	l.background.Add(1)
	go func() {
		defer l.background.Done()
		c.pump()
	}()
	return c
}

// pump reads the client's messages and hands their bytes to Read, until
// the connection ends.
func (c *wsConn) pump() {
	defer close(c.pumped)
	buf := make([]byte, 16<<10)
	for {
		typ, r, err := c.ws.Reader(c.l.ctx)
		if err != nil {
			switch websocket.CloseStatus(err) {
			case websocket.StatusNormalClosure, websocket.StatusGoingAway:
				err = io.EOF
			}
			c.readErr = err
			return
		}
		if typ != websocket.MessageBinary {
			_, _ = io.Copy(io.Discard, r) // frees the reader for the closing handshake
			c.readErr = errTextMessage
			c.closeWith(websocket.StatusUnsupportedData, "MQTT over WebSocket takes binary messages only")
			return
		}
		for {
			n, err := r.Read(buf)
			if n > 0 {
				select {
				case c.in <- buf[:n]:
				case <-c.closed:
					c.readErr = net.ErrClosed
					return
				}
				select {
				case <-c.consumed:
				case <-c.closed:
					c.readErr = net.ErrClosed
					return
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				c.readErr = err
				return
			}
		}
	}
}

// Read reads the bytes of the binary messages received, across message
// boundaries.
func (c *wsConn) Read(p []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if len(c.pending) == 0 {
		select {
		case <-c.readDL.wait():
			return 0, os.ErrDeadlineExceeded
		default:
		}
		select {
		case piece := <-c.in:
			c.pending = piece
		case <-c.pumped:
			return 0, c.readErr
		case <-c.closed:
			return 0, net.ErrClosed
		case <-c.readDL.wait():
			return 0, os.ErrDeadlineExceeded
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	if len(c.pending) == 0 {
		c.consumed <- struct{}{}
	}
	return n, nil
}

// Write sends p as one binary message. A write that the write deadline
// interrupts ends the connection, as the state of the stream is not
// known after it (a deadline set while a write waits applies from the
// next write).
func (c *wsConn) Write(p []byte) (int, error) {
	ctx := c.l.ctx
	if t := c.writeDL.time(); !t.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, t)
		defer cancel()
	}
	if err := c.ws.Write(ctx, websocket.MessageBinary, p); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, os.ErrDeadlineExceeded
		}
		return 0, err
	}
	return len(p), nil
}

// Close ends the connection with a WebSocket close (1000) and returns at
// once: the closing handshake runs on a goroutine of the listener, and a
// client that does not answer it within closeLinger has its TCP
// connection closed (lingering, see closeLinger).
func (c *wsConn) Close() error {
	c.closeWith(websocket.StatusNormalClosure, "")
	return nil
}

func (c *wsConn) closeWith(code websocket.StatusCode, reason string) {
	c.close.Do(func() {
		close(c.closed)
		c.l.background.Add(1)
		go func() {
			defer c.l.background.Done()
			force := time.AfterFunc(closeLinger, c.closeRaw)
			_ = c.ws.Close(code, reason)
			force.Stop()
		}()
	})
}

// closeRaw closes the TCP connection under the WebSocket, which ends a
// closing handshake that the client does not answer.
func (c *wsConn) closeRaw() {
	raw := c.raw
	if tc, ok := raw.(*tls.Conn); ok {
		raw = tc.NetConn() // no close_notify: it could wait for the client too
	}
	if raw != nil {
		_ = raw.Close()
	}
}

// LocalAddr returns the listener's address of the connection.
func (c *wsConn) LocalAddr() net.Addr { return c.raw.LocalAddr() }

// RemoteAddr returns the client's address, as the TCP connection has it.
func (c *wsConn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetDeadline sets the read and write deadlines.
func (c *wsConn) SetDeadline(t time.Time) error {
	c.readDL.set(t)
	c.writeDL.set(t)
	return nil
}

// SetReadDeadline ends a Read waiting at t (or at once for a time
// passed), without ending the connection.
func (c *wsConn) SetReadDeadline(t time.Time) error {
	c.readDL.set(t)
	return nil
}

// SetWriteDeadline bounds the writes; one that it interrupts ends the
// connection.
func (c *wsConn) SetWriteDeadline(t time.Time) error {
	c.writeDL.set(t)
	return nil
}

// ConnectionState returns the TLS state of the connection the WebSocket
// runs over (the zero state without TLS), for client certificates.
func (c *wsConn) ConnectionState() tls.ConnectionState {
	if c.tls == nil {
		return tls.ConnectionState{}
	}
	return *c.tls
}

// connDeadline is a deadline that closes a channel when it passes, as
// net.Pipe's do.
type connDeadline struct {
	mu     sync.Mutex
	at     time.Time     // guarded by mu
	timer  *time.Timer   // guarded by mu
	cancel chan struct{} // guarded by mu; closed when the deadline passed
}

func newConnDeadline() *connDeadline {
	return &connDeadline{cancel: make(chan struct{})}
}

// set sets the deadline; the zero time clears it.
func (d *connDeadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at = t
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired: it closed cancel
	}
	d.timer = nil
	closed := isClosed(d.cancel)
	if t.IsZero() {
		if closed {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.cancel = make(chan struct{})
		}
		ch := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(ch) })
		return
	}
	if !closed {
		close(d.cancel)
	}
}

// time returns the deadline, zero for none.
func (d *connDeadline) time() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.at
}

// wait returns a channel closed when the deadline passes.
func (d *connDeadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
