package server

import "golang.org/x/sys/unix"

// readMemoryLimit returns the machine's memory as macOS reports it.
func readMemoryLimit() memoryLimit {
	if n, err := unix.SysctlUint64("hw.memsize"); err == nil && n > 0 {
		return memoryLimit{int64(n), "the machine's memory (sysctl hw.memsize)"}
	}
	return memoryLimit{fallbackMemory, "assumed: sysctl hw.memsize failed"}
}
