package server

import (
	"runtime"
	"testing"
)

// The default quotas are shares of the machine's memory: it must be read
// on every system dss supports, not assumed.
func TestMachineMemoryIsReadFromTheSystem(t *testing.T) {
	switch runtime.GOOS {
	case "linux", "darwin", "windows":
	default:
		t.Skipf("%s: the memory is assumed to be %d bytes", runtime.GOOS, fallbackMemory)
	}
	m := machineMemory()
	if m == fallbackMemory || m < 64<<20 {
		t.Fatalf("machineMemory() = %d bytes: not read from the system", m)
	}
	if s := systemMemory(); runtime.GOOS != "linux" && s != m {
		t.Fatalf("systemMemory() = %d, machineMemory() = %d", s, m)
	}
}
