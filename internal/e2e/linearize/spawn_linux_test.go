package linearize

import (
	"os/exec"
	"runtime"
	"syscall"
)

// spawns are the processes waiting to be started by the spawner.
var spawns = make(chan spawn)

type spawn struct {
	cmd  *exec.Cmd
	done chan error
}

// The spawner starts every dss process from one OS thread that never
// exits, with SIGKILL as the signal a child gets when its parent dies: no
// process outlives a test binary that panics or is killed. (The kernel
// sends that signal when the thread that forked the child exits, so the
// thread must be one that does not.)
func init() {
	go func() {
		runtime.LockOSThread()
		for s := range spawns {
			s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			s.done <- s.cmd.Start()
		}
	}()
}

// startProcess starts cmd; it ends when the test binary does.
func startProcess(cmd *exec.Cmd) error {
	s := spawn{cmd: cmd, done: make(chan error, 1)}
	spawns <- s
	return <-s.done
}
