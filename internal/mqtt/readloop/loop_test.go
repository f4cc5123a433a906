//go:build linux

package readloop

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// conn is the server's end of a loopback connection, as a Handler reads
// it: a turn reads up to chunk bytes, once.
type conn struct {
	m     Member
	net   net.Conn
	raw   syscall.RawConn
	chunk int
}

// event is what a handler saw: a turn's bytes, a connection leaving, or
// the end of a round.
type event struct {
	c     *conn
	kind  string // "read", "eof", "left", "round"
	bytes string
	err   error
}

// handler records what the loop calls; a turn that reads "bye" ends
// with errBye.
type handler struct {
	events chan event
}

var errBye = errors.New("bye")

func (h *handler) Turn(c *conn, now int64) error {
	if now <= 0 || now > Now() {
		panic("a turn's now is not the monotonic clock's")
	}
	buf := make([]byte, c.chunk)
	var n int
	var rerr error
	if err := c.raw.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), buf)
		return true // one read, never waiting
	}); err != nil {
		return err
	}
	switch {
	case rerr == syscall.EAGAIN:
		return nil
	case rerr != nil:
		return rerr
	case n == 0:
		h.events <- event{c: c, kind: "eof"}
		return io.EOF
	}
	h.events <- event{c: c, kind: "read", bytes: string(buf[:n])}
	if string(buf[:n]) == "bye" {
		return errBye
	}
	return nil
}

func (h *handler) Left(c *conn, err error) { h.events <- event{c: c, kind: "left", err: err} }

func (h *handler) RoundDone() {
	select {
	case h.events <- event{kind: "round"}:
	default: // rounds are only looked at where the test waits for them
	}
}

// next returns the next event that is not the end of a round.
func (h *handler) next(t *testing.T) event {
	t.Helper()
	for {
		select {
		case e := <-h.events:
			if e.kind != "round" {
				return e
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no event within 5 s")
		}
	}
}

// quiet fails the test if anything but the end of a round comes within d.
func (h *handler) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case e := <-h.events:
			if e.kind != "round" {
				t.Fatalf("unexpected %s of %q (%v)", e.kind, e.bytes, e.err)
			}
		case <-deadline:
			return
		}
	}
}

// pair returns the client's end of a loopback connection and the
// server's, as a conn reading chunk bytes a turn.
func pair(t *testing.T, chunk int) (net.Conn, *conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	raw, err := server.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return client, &conn{net: server, raw: raw, chunk: chunk}
}

func newLoop(t *testing.T) (*Loop[*conn], *handler) {
	t.Helper()
	h := &handler{events: make(chan event, 64)}
	l, err := New[*conn](h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l, h
}

// oneConn starts a loop reading one connection, chunk bytes a turn, and
// returns the loop, its handler, the client's end and the connection.
func oneConn(t *testing.T, chunk int) (*Loop[*conn], *handler, net.Conn, *conn) {
	t.Helper()
	l, h := newLoop(t)
	a, ca := pair(t, chunk)
	add(t, l, ca)
	return l, h, a, ca
}

func add(t *testing.T, l *Loop[*conn], c *conn) {
	t.Helper()
	if err := l.Add(&c.m, c.raw, c); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func TestAConnectionWithDataGetsATurn(t *testing.T) {
	l, h := newLoop(t)
	a, ca := pair(t, 64)
	b, cb := pair(t, 64)
	add(t, l, ca)
	add(t, l, cb)
	if n := l.Len(); n != 2 {
		t.Fatalf("Len %d, want 2", n)
	}
	h.quiet(t, 50*time.Millisecond) // no data, no turn
	write(t, b, "to b")
	if e := h.next(t); e.c != cb || e.kind != "read" || e.bytes != "to b" {
		t.Fatalf("%+v, want b's read", e)
	}
	write(t, a, "to a")
	if e := h.next(t); e.c != ca || e.kind != "read" || e.bytes != "to a" {
		t.Fatalf("%+v, want a's read", e)
	}
}

// Level-triggered: a turn that leaves data in the socket gets another.
func TestATurnThatLeavesDataGetsAnother(t *testing.T) {
	_, h, a, _ := oneConn(t, 2)
	write(t, a, "abcdef")
	var got string
	for len(got) < 6 {
		e := h.next(t)
		if e.kind != "read" || len(e.bytes) > 2 {
			t.Fatalf("%+v, want a read of at most 2 bytes", e)
		}
		got += e.bytes
	}
	if got != "abcdef" {
		t.Fatalf("read %q", got)
	}
}

func TestATurnsErrorHandsTheConnectionBack(t *testing.T) {
	l, h, a, ca := oneConn(t, 64)
	write(t, a, "bye")
	if e := h.next(t); e.kind != "read" {
		t.Fatalf("%+v, want the read", e)
	}
	if e := h.next(t); e.c != ca || e.kind != "left" || e.err != errBye {
		t.Fatalf("%+v, want a left with the turn's error", e)
	}
	if n := l.Len(); n != 0 {
		t.Fatalf("Len %d after the connection left", n)
	}
	if l.TakeBack(&ca.m) {
		t.Fatal("taken back after it left")
	}
	write(t, a, "more")
	h.quiet(t, 100*time.Millisecond) // the loop reads it no more
}

func TestThePeersEndIsATurn(t *testing.T) {
	l, h, a, ca := oneConn(t, 64)
	if err := a.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if e := h.next(t); e.c != ca || e.kind != "eof" {
		t.Fatalf("%+v, want the end of the connection", e)
	}
	if e := h.next(t); e.c != ca || e.kind != "left" || e.err != io.EOF {
		t.Fatalf("%+v, want a left with io.EOF", e)
	}
	if n := l.Len(); n != 0 {
		t.Fatalf("Len %d after the peer's end", n)
	}
}

func TestTakeBackEndsTheTurnsOnce(t *testing.T) {
	l, h, a, ca := oneConn(t, 64)
	if !l.TakeBack(&ca.m) {
		t.Fatal("not taken back")
	}
	if l.TakeBack(&ca.m) {
		t.Fatal("taken back twice")
	}
	write(t, a, "x")
	h.quiet(t, 100*time.Millisecond) // no turn and no Left: the owner has it
	// Taken back, it can be added again.
	add(t, l, ca)
	if e := h.next(t); e.kind != "read" || e.bytes != "x" {
		t.Fatalf("%+v, want the byte written meanwhile", e)
	}
}

func TestCloseHandsEveryConnectionBack(t *testing.T) {
	h := &handler{events: make(chan event, 64)}
	l, err := New[*conn](h)
	if err != nil {
		t.Fatal(err)
	}
	_, ca := pair(t, 64)
	_, cb := pair(t, 64)
	add(t, l, ca)
	add(t, l, cb)
	l.Close()
	left := map[*conn]bool{}
	for range 2 {
		e := h.next(t)
		if e.kind != "left" || e.err != nil {
			t.Fatalf("%+v, want a left without error", e)
		}
		left[e.c] = true
	}
	if !left[ca] || !left[cb] {
		t.Fatal("not every connection handed back")
	}
	if err := l.Add(&ca.m, ca.raw, ca); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Add after Close: %v, want os.ErrClosed", err)
	}
	if l.TakeBack(&cb.m) {
		t.Fatal("taken back from a closed loop")
	}
	l.Close() // twice is harmless
	h.quiet(t, 50*time.Millisecond)
}

// A turn holds its connection's Member: the owner looks at what turns
// change between them.
func TestWithoutTurnHoldsTheTurnsBack(t *testing.T) {
	l, h := newLoop(t)
	a, ca := pair(t, 64)
	ca.m.WithoutTurn(func(inLoop bool) {
		if inLoop {
			t.Fatal("in a loop before Add")
		}
	})
	add(t, l, ca)
	ca.m.WithoutTurn(func(inLoop bool) {
		if !inLoop {
			t.Fatal("not in the loop after Add")
		}
		write(t, a, "held")
		h.quiet(t, 100*time.Millisecond)
	})
	if e := h.next(t); e.kind != "read" || e.bytes != "held" {
		t.Fatalf("%+v, want the turn held back", e)
	}
}

// The turns of a round come before its end: what a round's turns leave
// for later (a write of several connections' replies) is done by then.
func TestARoundEndsAfterItsTurns(t *testing.T) {
	_, h, a, _ := oneConn(t, 64)
	write(t, a, "x")
	var kinds []string
	for len(kinds) < 2 {
		select {
		case e := <-h.events:
			kinds = append(kinds, e.kind)
		case <-time.After(5 * time.Second):
			t.Fatalf("saw %v", kinds)
		}
	}
	if kinds[0] != "read" || kinds[1] != "round" {
		t.Fatalf("saw %v, want a read, then the end of its round", kinds)
	}
}

// A connection closed by another goroutine while in the loop is taken
// out later by its owner; by then the descriptor's number may be a
// newer connection's, which the loop must go on watching.
func TestTakingBackAClosedConnectionLeavesItsDescriptorsNextOwner(t *testing.T) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(epfd)
	l := &Loop[*conn]{epfd: epfd} // not running: the test waits on its epoll instance itself

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial := func() (*conn, net.Conn, int) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		raw, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var fd int
		if err := raw.Control(func(d uintptr) { fd = int(d) }); err != nil {
			t.Fatal(err)
		}
		return &conn{net: c, raw: raw}, c, fd
	}

	a, connA, fdA := dial()
	add(t, l, a)
	if err := connA.Close(); err != nil { // as a client stopped elsewhere
		t.Fatal(err)
	}
	b, connB, fdB := dial()
	defer connB.Close()
	if fdA != fdB {
		t.Skipf("the kernel gave out descriptor %d, then %d", fdA, fdB)
	}
	add(t, l, b)
	if !l.TakeBack(&a.m) { // by the goroutine that ends it, late
		t.Fatal("a not taken back")
	}
	if l.Len() != 1 || l.conns[fdB].c != b {
		t.Fatalf("Len %d, slot %+v: b must stay", l.Len(), l.conns[fdB])
	}

	// The listener's backlog holds a's server end, then b's: a byte
	// from each.
	for range 2 {
		peer, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		if _, err := peer.Write([]byte{0}); err != nil {
			t.Fatal(err)
		}
	}
	events := make([]syscall.EpollEvent, 4)
	n, err := syscall.EpollWait(epfd, events, 5000)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || events[0].Fd != int32(fdB) {
		t.Fatalf("%d events, first of descriptor %d: want b's (%d) only", n, events[0].Fd, fdB)
	}
	if !l.TakeBack(&b.m) || l.TakeBack(&b.m) {
		t.Fatal("b must be taken back once")
	}
	if l.Len() != 0 || l.conns[fdB].m != nil {
		t.Fatal("b's slot is still taken")
	}
}

// Turns of many connections at once, with owners taking them back and
// adding them again meanwhile: every connection leaves once, by one way.
func TestConnectionsLeaveOnceUnderLoad(t *testing.T) {
	l, h := newLoop(t)
	drained, stop := make(chan struct{}), make(chan struct{})
	go func() { // the turns' events are not looked at here
		defer close(drained)
		for {
			select {
			case <-h.events:
			case <-stop:
				return
			}
		}
	}()
	defer func() { close(stop); <-drained }()
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		a, ca := pair(t, 1)
		add(t, l, ca)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				if _, err := a.Write([]byte{byte(j)}); err != nil {
					t.Error(err)
					return
				}
				if j%(10+i) == 0 && l.TakeBack(&ca.m) {
					if err := l.Add(&ca.m, ca.raw, ca); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if got := l.Len(); got != n {
		t.Fatalf("Len %d, want %d", got, n)
	}
	l.Close()
	if got := l.Len(); got != 0 {
		t.Fatalf("Len %d after Close", got)
	}
}
