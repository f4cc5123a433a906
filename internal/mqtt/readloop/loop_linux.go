//go:build linux

package readloop

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"syscall"

	"github.com/dssio/dss/internal/rawio"
)

// Available reports whether New can start loops on this system (Linux:
// epoll).
const Available = true

// A Loop reads the connections added to it with one epoll instance, on
// one goroutine.
type Loop[C comparable] struct {
	file *os.File // the epoll instance
	raw  syscall.RawConn
	h    Handler[C]

	mu   sync.Mutex
	epfd int
	// conns holds the connections by descriptor, which the kernel keeps
	// small and dense: a round looks up every reported one, and an array
	// of 4,096 entries is a few cache lines per round where a map of them
	// missed the cache twice a lookup. count is how many there are.
	conns  []slot[C]
	count  int
	closed bool
}

// slot is a connection of the loop: its Member and what the Handler
// knows it by.
type slot[C comparable] struct {
	m *Member
	c C
}

// New starts a loop that reads its connections' turns with h.
func New[C comparable](h Handler[C]) (*Loop[C], error) {
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
	l := &Loop[C]{file: file, raw: raw, h: h, epfd: epfd}
	go l.run()
	return l, nil
}

// Add has the loop read the connection of raw, which m stands for and
// the Handler knows as c, until it leaves. It reports os.ErrClosed once
// the loop is closed.
func (l *Loop[C]) Add(m *Member, raw syscall.RawConn, c C) error {
	var fd int
	if err := raw.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return os.ErrClosed
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Level-triggered: a turn may read once, and a connection with more
	// to read is reported again.
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	m.raw, m.fd, m.added = raw, fd, true
	if fd >= len(l.conns) {
		l.conns = append(l.conns, make([]slot[C], fd+1-len(l.conns))...)
	}
	if l.conns[fd].m == nil {
		// Otherwise the slot held a connection closed while in the
		// loop, whose removal is still to come (see drop): counted
		// already.
		l.count++
	}
	l.conns[fd] = slot[C]{m: m, c: c}
	return nil
}

// TakeBack stops the loop reading m's connection, after its turn if one
// is under way, and reports whether the loop was reading it: the caller
// then continues the connection, and Left is not called for it. Of the
// turn's error, Close and TakeBack, the first to take a connection back
// does.
func (l *Loop[C]) TakeBack(m *Member) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.added {
		return false
	}
	l.drop(m)
	return true
}

// Len reports how many connections the loop reads.
func (l *Loop[C]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

// drop removes m, whose lock the caller holds with the loop's.
func (l *Loop[C]) drop(m *Member) {
	if !m.added {
		return
	}
	m.added = false
	if l.conns[m.fd].m == m {
		l.conns[m.fd] = slot[C]{}
		l.count--
	}
	if !l.closed {
		// A connection closed by another goroutine while in the loop,
		// before its owner took it back, leaves its descriptor's number
		// free: it may belong to a newer connection of this loop by
		// now. Control runs only while the connection is open, and
		// keeps it open meanwhile; closing it took it out of the epoll
		// instance.
		_ = m.raw.Control(func(fd uintptr) {
			_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
		})
	}
	m.raw = nil
}

// Close stops the loop; the connections it reads are handed back with
// a nil error.
func (l *Loop[C]) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	for _, s := range l.conns {
		if s.m != nil {
			l.handBack(s, nil)
		}
	}
	l.closed = true
	_ = l.file.Close()
}

// handBack returns s's connection to its owner, with err; the caller
// holds the loop's lock.
func (l *Loop[C]) handBack(s slot[C], err error) {
	s.m.mu.Lock()
	if !s.m.added {
		s.m.mu.Unlock()
		return
	}
	l.drop(s.m)
	s.m.mu.Unlock()
	l.h.Left(s.c, err)
}

// run waits for connections with data and gives each a turn, until the
// loop is closed.
func (l *Loop[C]) run() {
	events := make([]syscall.EpollEvent, 128)
	ready := make([]readySlot[C], 0, len(events))
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
				l.Close() // hands every connection back
			}
			return
		}
		now := Now()
		l.mu.Lock()
		ready = ready[:0]
		for _, ev := range events[:n] {
			ready = append(ready, readySlot[C]{fd: ev.Fd, slot: l.conns[ev.Fd]}) // added once, so in range
		}
		l.mu.Unlock()
		for _, r := range ready {
			l.serve(r.fd, r.slot, now)
		}
		clear(ready) // holds no connection until the next round
		l.h.RoundDone()
		// The loop is runnable while connections have data: let the
		// goroutines it feeds (a journal, a write loop) run between
		// rounds rather than at preemption.
		runtime.Gosched()
	}
}

// readySlot is a connection epoll reported ready (an empty slot if it
// was removed since).
type readySlot[C comparable] struct {
	fd   int32
	slot slot[C]
}

// serve gives s, the connection of descriptor fd, a turn at now.
func (l *Loop[C]) serve(fd int32, s slot[C], now int64) {
	m := s.m
	if m == nil {
		return // removed since the event
	}
	m.mu.Lock()
	if !m.added || m.fd != int(fd) {
		m.mu.Unlock()
		return
	}
	err := l.h.Turn(s.c, now)
	m.mu.Unlock()
	if err == nil {
		return
	}
	l.mu.Lock()
	l.handBack(s, err)
	l.mu.Unlock()
}
