// SPDX-License-Identifier: MIT

package mqtt

// prefetch asks the CPU to bring the cache lines of the n bytes (at
// least one) at addr into its cache, without waiting for them. It never
// faults.
//
//go:noescape
func prefetch(addr, n uintptr)
