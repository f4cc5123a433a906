// SPDX-License-Identifier: MIT

package mqtt

// prefetch asks the CPU to bring the cache line at addr into its cache,
// without waiting for it. It never faults.
//
//go:noescape
func prefetch(addr uintptr)
