package procstat

import (
	"time"

	"github.com/prometheus/procfs"
)

// processUsage reads the CPU time and resident memory of process pid
// from /proc.
func processUsage(pid int) (time.Duration, int64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, 0, err
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), int64(st.ResidentMemory()), nil
}
