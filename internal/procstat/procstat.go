// Package procstat reads the CPU time and resident memory of this process
// and of another one, the server under load, from the kernel: the load
// generators (dss bench, tools/tcpfloor) report a server's CPU per
// request and its memory from two readings taken around a window.
package procstat

import (
	"fmt"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// Reading is the CPU time of this process and of a server at a moment.
type Reading struct {
	At        time.Time
	Self      time.Duration // user + system time of this process
	Server    time.Duration // user + system time of the server, if ServerOK
	ServerRSS int64         // resident memory of the server in bytes, if ServerOK
	ServerOK  bool
}

// Read reads the CPU time of this process and, when pid is not 0, the CPU
// time and resident memory of process pid.
func Read(pid int) (Reading, error) {
	r := Reading{At: time.Now()}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		r.Self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if pid == 0 {
		return r, nil
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return r, fmt.Errorf("server process %d: %w", pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return r, fmt.Errorf("server process %d: %w", pid, err)
	}
	r.Server = time.Duration(st.CPUTime() * float64(time.Second))
	r.ServerRSS = int64(st.ResidentMemory())
	r.ServerOK = true
	return r, nil
}
