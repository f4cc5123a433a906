//go:build !linux

package procstat

import (
	"errors"
	"fmt"
	"time"
)

// processUsage fails outside Linux, where another process's figures are
// not read from a /proc file system.
func processUsage(int) (time.Duration, int64, error) {
	return 0, 0, fmt.Errorf("reading another process's CPU time and memory needs Linux's /proc: %w", errors.ErrUnsupported)
}
