//go:build unix

package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns the two ends of a TCP connection on loopback, the first
// wrapped.
func pair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	w := Wrap(c)
	if _, ok := w.(*Conn); !ok {
		t.Fatalf("Wrap of a TCP connection returned %T", w)
	}
	t.Cleanup(func() { w.Close(); peer.Close() })
	return w, peer
}

func TestConnCarriesBytesBothWays(t *testing.T) {
	c, peer := pair(t)
	// More than the socket buffers hold: Write must wait for room.
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(want))))
		got <- b
	}()
	n, err := c.Write(want)
	if err != nil || n != len(want) {
		t.Fatalf("Write: %d, %v; want %d, nil", n, err, len(want))
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the peer read %d bytes, not what was written", len(b))
	}
	if _, err := peer.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err = io.ReadAtLeast(c, buf, 4)
	if err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("Read: %q, %v", buf[:n], err)
	}
}

func TestConnReadKeepsDeadlinesAndEOF(t *testing.T) {
	c, peer := pair(t)
	if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := c.Read(make([]byte, 8))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read past its deadline: %v, want a timeout with os.ErrDeadlineExceeded", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	peer.Close()
	if _, err := c.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("Read after the peer closed: %v, want io.EOF", err)
	}
}

func TestConnAfterCloseReportsClosed(t *testing.T) {
	c, _ := pair(t)
	c.Close()
	if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v, want net.ErrClosed", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v, want net.ErrClosed", err)
	}
}

func TestConnWriteFailsWhenThePeerIsGone(t *testing.T) {
	c, peer := pair(t)
	peer.(*net.TCPConn).SetLinger(0) // a reset, not an orderly close
	peer.Close()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = c.Write([]byte("into a reset connection"))
		time.Sleep(time.Millisecond)
	}
	var oe *net.OpError
	if err == nil || !errors.As(err, &oe) || oe.Op != "write" {
		t.Fatalf("Write to a reset connection: %v, want a *net.OpError of write", err)
	}
}

func TestWrapLeavesOtherConnectionsAlone(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if w := Wrap(a); w != a {
		t.Fatalf("Wrap of a pipe returned %T, want the pipe itself", w)
	}
}

// CloseWrite shuts the sending side only: the peer reads what was sent
// and then the end of the stream, and can still answer.
func TestConnCloseWriteShutsTheSendingSideOnly(t *testing.T) {
	c, peer := pair(t)
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("a wrapped TCP connection has no CloseWrite")
	}
	if _, err := c.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(peer)
	if err != nil || string(got) != "bye" {
		t.Fatalf("the peer read %q, %v; want \"bye\" and the end of the stream", got, err)
	}
	if _, err := peer.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	n, err := io.ReadAtLeast(c, buf, 2)
	if err != nil || string(buf[:n]) != "ok" {
		t.Fatalf("after CloseWrite, Read: %q, %v", buf[:n], err)
	}
}
