//go:build !linux

package broker

import "time"

// threadCPU is not measured here: only Linux gives a thread's CPU time.
func threadCPU() (time.Duration, bool) { return 0, false }
