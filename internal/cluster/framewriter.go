package cluster

import (
	"net"
	"sync"
	"time"
)

// frameWriter writes the items added to it to a connection from a
// goroutine of its own (run), as many to a frame as were added since its
// last write, so that whoever adds them never waits for the network: the
// leader's delivery goroutine adds results, a follower's forwarding
// goroutine adds writes.
type frameWriter struct {
	c       net.Conn
	timeout time.Duration // of one write
	failed  func(error)   // a write failed; called once, from run

	mu     sync.Mutex
	f      frame // guarded by mu; the items not yet written
	closed bool  // guarded by mu

	wake chan struct{}
	done chan struct{}
}

func newFrameWriter(c net.Conn, timeout time.Duration, failed func(error)) *frameWriter {
	w := &frameWriter{c: c, timeout: timeout, failed: failed, wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.f.reset()
	return w
}

// append adds an item, which enc appends to the frame's bytes. It does
// not block.
func (w *frameWriter) append(enc func([]byte) []byte) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.f.buf = enc(w.f.buf)
	w.f.count++
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run writes the items added until close, or until a write fails.
func (w *frameWriter) run() {
	var spare frame
	spare.reset()
	for {
		select {
		case <-w.wake:
		case <-w.done:
			return
		}
		w.mu.Lock()
		f := w.f
		w.f = spare
		w.mu.Unlock()
		if f.count > 0 {
			_ = w.c.SetWriteDeadline(time.Now().Add(w.timeout))
			if _, err := w.c.Write(f.bytes()); err != nil {
				w.failed(err)
				return
			}
		}
		f.reset()
		spare = f
	}
}

// close stops run; items not yet written are dropped.
func (w *frameWriter) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.done)
	}
	w.mu.Unlock()
}
