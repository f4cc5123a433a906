package rawio

import (
	"syscall"
	"unsafe"
)

// EpollPoll reports the ready events of the epoll instance epfd into
// events without waiting, as syscall.EpollWait with a timeout of 0
// (epoll_pwait without a signal mask, which every Linux architecture
// has; some have no epoll_wait).
func EpollPoll(epfd int, events []syscall.EpollEvent) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}
