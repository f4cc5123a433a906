//go:build !darwin && !windows

package server

// systemMemory is what a system without /proc/meminfo and without a way
// of its own that dss knows is assumed to have.
func systemMemory() int64 { return fallbackMemory }
