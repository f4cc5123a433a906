package server

import (
	"runtime"
	"testing"
)

// The default quotas are shares of the memory: it must be read on every
// system dss supports, not assumed.
func TestMachineMemoryIsReadFromTheSystem(t *testing.T) {
	switch runtime.GOOS {
	case "linux", "darwin", "windows":
	default:
		t.Skipf("%s: the memory is assumed to be %d bytes", runtime.GOOS, fallbackMemory)
	}
	m := readMemoryLimit()
	if m.bytes == fallbackMemory || m.bytes < 64<<20 || m.source == "" {
		t.Fatalf("readMemoryLimit() = %v: not read from the system", m)
	}
	if machineMemory() != m.bytes {
		t.Fatalf("machineMemory() = %d, readMemoryLimit() = %v", machineMemory(), m)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{512: "512 B", 1536: "1.5 KiB", 4 << 30: "4.0 GiB", 64 << 20: "64.0 MiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
