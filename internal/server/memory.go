package server

import (
	"fmt"
	"sync"
)

// fallbackMemory is assumed when the memory cannot be read.
const fallbackMemory = 4 << 30

// memoryLimit is the memory the server may use, and where the figure
// comes from, for the start-up line.
type memoryLimit struct {
	bytes  int64
	source string
}

func (m memoryLimit) String() string { return fmt.Sprintf("%s (%s)", humanBytes(m.bytes), m.source) }

// serverMemory is read once: the defaults derived from it and the
// start-up line agree.
var serverMemory = sync.OnceValue(readMemoryLimit)

// machineMemory is the memory the memory-derived defaults are shares of:
// the machine's, or less where a control group limits the process.
func machineMemory() int64 { return serverMemory().bytes }

// humanBytes writes n in the largest binary unit that keeps one decimal.
func humanBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}
