//go:build unix

// Package rawio reads and writes non-blocking sockets without telling the
// Go scheduler about the system call.
//
// A read or write of a non-blocking socket does not block, so the
// scheduler has nothing to do around it. syscall.Read and syscall.Write
// still enter and leave the scheduler's system call state on every call,
// and the first such call after the process had nothing to run wakes the
// runtime's monitor thread, which then polls every 20 µs for a while. A
// server that answers one request at a time goes idle between every two
// of them and paid that wake-up, and the monitor's polling on the same
// CPU, on each request: about a fifth of its CPU per request, measured on
// a client with one request in flight and on the server it talked to
// (docs/internals/performance.md). The calls here skip that state; they
// are for descriptors in non-blocking mode only (every socket of package
// net is), and the caller waits through the runtime's poller
// (syscall.RawConn) when they report EAGAIN.
package rawio

import (
	"syscall"
	"unsafe"
)

// Read reads into p from the non-blocking descriptor fd, as syscall.Read.
func Read(fd int, p []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), bufPtr(p), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// Write writes p to the non-blocking descriptor fd, as syscall.Write.
func Write(fd int, p []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), bufPtr(p), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// bufPtr is the address of p's first byte, 0 for an empty p (which the
// kernel does not look at).
func bufPtr(p []byte) uintptr {
	if len(p) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&p[0]))
}
