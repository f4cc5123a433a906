package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat. Linux reports them
// in USER_HZ, which is 100 on every architecture Go runs on.
const userHZ = 100

// usage is a reading of the CPU time of the generator and of the server.
type usage struct {
	at        time.Time
	self      time.Duration // user + system time of this process
	server    time.Duration // of the server process, if known
	serverRSS int64         // bytes
	serverOK  bool
}

// readUsage reads the CPU time of this process and, when pid is not 0, of
// process pid.
func readUsage(pid int) (usage, error) {
	u := usage{at: time.Now()}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		u.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if pid == 0 {
		return u, nil
	}
	cpu, err := processCPU(pid)
	if err != nil {
		return u, err
	}
	rss, err := processRSS(pid)
	if err != nil {
		return u, err
	}
	u.server, u.serverRSS, u.serverOK = cpu, rss, true
	return u, nil
}

// processCPU returns utime+stime of pid from /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: server CPU time: %w", err)
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// count the fields after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: cannot parse /proc/%d/stat", pid)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: cannot parse /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench: cannot parse /proc/%d/stat", pid)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// processRSS returns the resident set size of pid from /proc/PID/status.
func processRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: server memory: %w", err)
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(string(f[0]), 10, 64)
				if err == nil {
					return kb << 10, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("bench: no VmRSS in /proc/%d/status", pid)
}
