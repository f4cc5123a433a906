// Package procstat reads the CPU time and resident memory of this process
// and of another one, the server under load, from the kernel: the load
// generators (dss bench, tools/tcpfloor) report a server's CPU per
// request and its memory from two readings taken around a window.
//
// This process's CPU time is read everywhere; another process's figures
// come from /proc, on Linux only: elsewhere Read of a pid fails with an
// error that wraps errors.ErrUnsupported.
package procstat

import (
	"fmt"
	"time"
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
	if self, err := selfCPU(); err == nil {
		r.Self = self
	}
	if pid == 0 {
		return r, nil
	}
	cpu, rss, err := processUsage(pid)
	if err != nil {
		return r, fmt.Errorf("server process %d: %w", pid, err)
	}
	r.Server, r.ServerRSS, r.ServerOK = cpu, rss, true
	return r, nil
}
