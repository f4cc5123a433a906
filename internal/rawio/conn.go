//go:build unix

package rawio

import (
	"io"
	"net"
	"os"
	"syscall"
)

// Conn is a net.Conn (a TCP or Unix socket) whose reads and writes go
// through Read and Write. It waits for its socket in the runtime's
// poller as the net.Conn does, and keeps its deadlines.
type Conn struct {
	net.Conn
	raw syscall.RawConn
}

// Wrap returns c as a Conn if it is a socket of package net, and c
// itself otherwise (a TLS connection, a pipe).
func Wrap(c net.Conn) net.Conn {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return c
	}
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return c
	}
	return &Conn{Conn: c, raw: raw}
}

// NetConn returns the connection c wraps, as tls.Conn's NetConn does.
func (c *Conn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts the sending side of the socket, as the TCP or Unix
// connection's CloseWrite does: the server ends a connection after a
// DISCONNECT that way, so that the client reads the DISCONNECT and the
// end of the stream rather than a reset.
func (c *Conn) CloseWrite() error {
	return c.Conn.(interface{ CloseWrite() error }).CloseWrite()
}

// SyscallConn returns the socket's raw connection.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// Read reads as net.Conn's Read: it waits until some bytes came, the
// peer closed the connection (io.EOF) or the read deadline passed.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			n, rerr = Read(int(fd), p)
			switch rerr {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until readable
			}
			return true
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case rerr != nil:
		return 0, c.opError("read", rerr)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p as net.Conn's Write, waiting for room while the
// write deadline allows.
func (c *Conn) Write(p []byte) (int, error) {
	var n int
	var werr error
	err := c.raw.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, e := Write(int(fd), p[n:])
			if m > 0 {
				n += m
			}
			switch e {
			case nil:
				if m == 0 {
					werr = io.ErrUnexpectedEOF // as package net: no progress
					return true
				}
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until writable
			default:
				werr = e
				return true
			}
		}
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return n, c.opError("write", err)
	}
	return n, nil
}

// opError wraps err as package net does, so that errors.Is finds
// os.ErrDeadlineExceeded and net.ErrClosed in it as in a net.Conn's.
func (c *Conn) opError(op string, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, errno)
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
