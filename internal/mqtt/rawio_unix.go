// SPDX-License-Identifier: MIT

//go:build unix

package mqtt

import (
	"crypto/tls"
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dssio/dss/internal/rawio"
)

// rawIO reports whether a connection that offers its descriptor is read
// and written through it without waiting: a read loop's turns
// (loopconn.go) and WriteNow's writes (writenow.go).
const rawIO = true

// readOnce is the read of a turn, for raw.Read.
func (r *connReader) readOnce(fd uintptr) bool {
	for {
		r.n, r.err = rawio.Read(int(fd), r.p)
		if r.err != syscall.EINTR {
			return true
		}
	}
}

// writeNoWait writes w.data as far as the descriptor takes it without
// waiting, for raw.Write.
func (w *fdWriter) writeNoWait(fd uintptr) bool {
	for w.n < len(w.data) {
		m, err := rawio.Write(int(fd), w.data[w.n:])
		if m > 0 {
			w.n += m
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true // full: the write loop waits for room
		case err != nil:
			w.err = err
			return true
		case m == 0:
			return true
		}
	}
	return true
}

// socketWritable reports whether the socket under conn (a TLS
// connection's too) takes bytes now: the peer has been reading what it
// was sent. dss: as socketReadable, for a write whose deadline passed.
func socketWritable(conn net.Conn) bool {
	raw := rawConnOf(conn)
	if raw == nil {
		return false
	}
	ready := false
	_ = raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		for {
			n, err := unix.Poll(fds, 0)
			if err != unix.EINTR {
				ready = n > 0 && fds[0].Revents&unix.POLLOUT != 0
				return
			}
		}
	})
	return ready
}

// rawConnOf returns the descriptor access of the socket under conn (a
// TLS connection's too), nil if it has none.
func rawConnOf(conn net.Conn) syscall.RawConn {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// socketReadable reports whether bytes of the peer's wait in the socket
// under conn (a TLS connection's too), without taking them. dss: a read
// whose deadline passed fails without looking, also when the bytes came
// in time but the server did not run (stopped, or starved of CPU).
func socketReadable(conn net.Conn) bool {
	raw := rawConnOf(conn)
	if raw == nil {
		return false
	}
	var n int
	var b [1]byte
	_ = raw.Control(func(fd uintptr) {
		for {
			var err error
			n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			if err != syscall.EINTR {
				return
			}
		}
	})
	return n > 0
}
