package server

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// memoryStatusEx is Windows's MEMORYSTATUSEX.
type memoryStatusEx struct {
	length               uint32
	memoryLoad           uint32
	totalPhys            uint64
	availPhys            uint64
	totalPageFile        uint64
	availPageFile        uint64
	totalVirtual         uint64
	availVirtual         uint64
	availExtendedVirtual uint64
}

var globalMemoryStatusEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")

// readMemoryLimit returns the machine's physical memory as Windows
// reports it.
func readMemoryLimit() memoryLimit {
	st := memoryStatusEx{length: uint32(unsafe.Sizeof(memoryStatusEx{}))}
	if ok, _, _ := globalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&st))); ok == 0 || st.totalPhys == 0 {
		return memoryLimit{fallbackMemory, "assumed: GlobalMemoryStatusEx failed"}
	}
	return memoryLimit{int64(st.totalPhys), "the machine's memory (GlobalMemoryStatusEx)"}
}
