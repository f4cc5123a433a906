// SPDX-License-Identifier: MIT

//go:build linux

package mqtt

import (
	"bufio"
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/dssio/dss/internal/rawio"
)

// ReadLoopsAvailable reports whether Options.ReadLoops can start read
// loops on this system (Linux: epoll).
const ReadLoopsAvailable = true

// readLoop reads the connections added to it with one epoll instance, on
// one goroutine (see readloop.go).
//
// dss: the epoll instance is itself waited for in the runtime's poller,
// so the loop's goroutine parks like any reader when nothing is ready,
// and holds no thread.
type readLoop struct {
	file *os.File // the epoll instance
	raw  syscall.RawConn
	bufs loopBuffers // for the connection in its turn, on the loop's goroutine

	mu   sync.Mutex
	epfd int
	// conns holds the connections by descriptor, which the kernel
	// keeps small and dense: a round looks up every reported one, and an
	// array of 4,096 pointers is 64 cache lines where a map of them
	// missed the cache twice a lookup. count is how many there are.
	conns  []*Client
	count  int
	closed bool

	// handedBack counts the turns that ended with the connection going
	// back to a goroutine of its own: the packets the loop does not
	// handle.
	handedBack atomic.Int64
}

// newReadLoop starts a read loop whose connections read with buffers of
// size bytes.
func newReadLoop(size int) (*readLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		_ = syscall.Close(epfd)
		return nil, os.NewSyscallError("setnonblock", err)
	}
	file := os.NewFile(uintptr(epfd), "epoll")
	raw, err := file.SyscallConn()
	if err != nil {
		_ = file.Close()
		return nil, err
	}
	l := &readLoop{file: file, raw: raw, epfd: epfd}
	l.bufs.reader = bufio.NewReaderSize(nil, size)
	go l.run()
	return l, nil
}

// add has the loop read cl's connection until it is taken back.
func (l *readLoop) add(cl *Client) error {
	ls := &cl.Net.loop
	var fd int
	if err := cl.Net.raw.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return os.ErrClosed
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	// Level-triggered: a turn reads once, and a connection with more
	// to read is reported again.
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	ls.fd, ls.added = fd, true
	if fd >= len(l.conns) {
		l.conns = append(l.conns, make([]*Client, fd+1-len(l.conns))...)
	}
	if l.conns[fd] == nil {
		// Otherwise the slot held a connection closed while parked,
		// whose removal is still to come (see drop): counted already.
		l.count++
	}
	l.conns[fd] = cl
	return nil
}

// takeBack stops the loop reading cl's connection, after its turn if
// one is under way, and reports whether the loop was reading it: the
// caller then continues the connection. Of the loop, the connection's
// timer and the client's end, the first to take it back does.
func (l *readLoop) takeBack(cl *Client) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := &cl.Net.loop
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if !ls.added {
		return false
	}
	l.drop(cl)
	return true
}

// drop removes cl, whose lock the caller holds with the loop's.
func (l *readLoop) drop(cl *Client) {
	ls := &cl.Net.loop
	if !ls.added {
		return
	}
	ls.added = false
	if l.conns[ls.fd] == cl {
		l.conns[ls.fd] = nil
		l.count--
	}
	if !l.closed {
		// A client stopped by another goroutine (a takeover, the
		// server's end) has its connection closed while parked, before
		// its reader goroutine gets here: the descriptor's number may
		// belong to a newer connection of this loop by now. Control
		// runs only while the connection is open, and keeps it open
		// meanwhile; closing it took it out of the epoll instance.
		_ = cl.Net.raw.Control(func(fd uintptr) {
			_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
		})
	}
}

// close stops the loop; the connections it reads go back to reader
// goroutines.
func (l *readLoop) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	for _, cl := range l.conns {
		if cl != nil {
			l.handBack(cl, nil)
		}
	}
	l.closed = true
	_ = l.file.Close()
}

// handBack returns cl to a reader goroutine of its own, with err; the
// caller holds the loop's lock.
func (l *readLoop) handBack(cl *Client, err error) {
	ls := &cl.Net.loop
	ls.mu.Lock()
	if !ls.added {
		ls.mu.Unlock()
		return
	}
	l.drop(cl)
	ls.mu.Unlock()
	cl.ops.workers.resume(cl, err)
}

// run waits for connections with data and gives each a turn, until the
// loop is closed.
func (l *readLoop) run() {
	events := make([]syscall.EpollEvent, 128)
	ready := make([]readyConn, 0, len(events))
	var n int
	var werr error
	wait := func(fd uintptr) bool {
		for {
			n, werr = rawio.EpollPoll(int(fd), events)
			if werr != syscall.EINTR {
				return n != 0 || werr != nil
			}
		}
	}
	for {
		err := l.raw.Read(wait)
		if err == nil {
			err = werr
		}
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				l.close() // hands every connection back
			}
			return
		}
		now := monoNow()
		l.mu.Lock()
		ready = ready[:0]
		for _, ev := range events[:n] {
			ready = append(ready, readyConn{fd: ev.Fd, cl: l.conns[ev.Fd]}) // added once, so in range
		}
		l.mu.Unlock()
		for _, r := range ready {
			l.serve(r.fd, r.cl, now)
		}
		l.bufs.round.flush()
		// The loop is runnable while connections have data: let the
		// goroutines it feeds (a journal, a write loop) run between
		// rounds rather than at preemption.
		runtime.Gosched()
	}
}

// readyConn is a connection epoll reported ready, and its client (nil if
// it was removed since).
type readyConn struct {
	fd int32
	cl *Client
}

// turn is cl's turn; a panic on the way ends the connection with
// ErrConnectionPanicked instead of the process (dss).
func (l *readLoop) turn(cl *Client, now int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = cl.ops.faults.panicked(cl.ops.log, cl.ops.faultLog, cl, r)
		}
	}()
	return cl.turn(&l.bufs, now)
}

// serve gives cl, the connection of descriptor fd, a turn at now.
func (l *readLoop) serve(fd int32, cl *Client, now int64) {
	if cl == nil {
		return // removed since the event
	}
	ls := &cl.Net.loop
	ls.mu.Lock()
	if !ls.added || ls.fd != int(fd) {
		ls.mu.Unlock()
		return
	}
	err := l.turn(cl, now)
	ls.mu.Unlock()
	if err == nil {
		return
	}
	if err == errHandBack {
		l.handedBack.Add(1)
		err = nil
	}
	l.mu.Lock()
	l.handBack(cl, err)
	l.mu.Unlock()
}
