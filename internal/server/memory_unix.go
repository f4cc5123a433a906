//go:build !linux && !darwin && !windows

package server

// readMemoryLimit: a system without a way of its own that dss knows is
// assumed to have fallbackMemory.
func readMemoryLimit() memoryLimit {
	return memoryLimit{fallbackMemory, "assumed: this system's memory is not read"}
}
