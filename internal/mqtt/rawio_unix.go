// SPDX-License-Identifier: MIT

//go:build unix

package mqtt

import "syscall"

// rawIO reports whether a connection that offers its descriptor is read
// and written through it without waiting: a read loop's turns
// (readloop.go) and WriteNow's writes (writenow.go).
const rawIO = true

// readOnce is the read of a turn, for raw.Read.
func (r *connReader) readOnce(fd uintptr) bool {
	for {
		r.n, r.err = syscall.Read(int(fd), r.p)
		if r.err != syscall.EINTR {
			return true
		}
	}
}

// writeNoWait writes w.data as far as the descriptor takes it without
// waiting, for raw.Write.
func (w *fdWriter) writeNoWait(fd uintptr) bool {
	for w.n < len(w.data) {
		m, err := syscall.Write(int(fd), w.data[w.n:])
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
