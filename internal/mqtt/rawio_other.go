// SPDX-License-Identifier: MIT

//go:build !unix

package mqtt

import (
	"errors"
	"net"
)

// rawIO is false where sockets are not read and written through a
// descriptor that can be tried without waiting (Windows's overlapped
// sockets): every connection is then read by its own goroutine and
// written through net.Conn, as a TLS connection is everywhere.
const rawIO = false

// errRawIOUnavailable is never returned: without rawIO no connection
// keeps its RawConn.
var errRawIOUnavailable = errors.New("reading and writing a descriptor without waiting is not available on this system")

func (r *connReader) readOnce(uintptr) bool {
	r.err = errRawIOUnavailable
	return true
}

func (w *fdWriter) writeNoWait(uintptr) bool {
	w.err = errRawIOUnavailable
	return true
}

// socketReadable cannot look into a socket here: a read past its
// deadline ends the connection.
func socketReadable(net.Conn) bool { return false }

// socketWritable cannot look into a socket here: a write past its
// deadline ends the connection.
func socketWritable(net.Conn) bool { return false }
