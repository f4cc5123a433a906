package server

import "golang.org/x/sys/unix"

// systemMemory returns the machine's memory as macOS reports it.
func systemMemory() int64 {
	if n, err := unix.SysctlUint64("hw.memsize"); err == nil && n > 0 {
		return int64(n)
	}
	return fallbackMemory
}
