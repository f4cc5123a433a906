package journal

import (
	"os"
	"syscall"
)

// fdatasync forces f's data to stable storage, and of its metadata only
// what reading the data back needs (its size): the journal's appends
// need no more. It holds a reference to the file for the duration, so a
// concurrent Close waits.
func fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fdatasync(int(fd)) }); err != nil {
		return err
	}
	return serr
}
