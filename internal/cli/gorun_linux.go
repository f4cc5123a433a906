package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// stopWithGoRun makes a server started by `go run ./cmd/dss serve` stop
// gracefully (SIGTERM) when the go command that started it exits. go run
// does not pass SIGTERM on to the program it runs: without this, stopping
// go run (a process manager, a shell script's kill) leaves the server
// running, holding its port and data directory. A server started any
// other way (its own binary, a service manager) is left alone.
func stopWithGoRun() {
	ppid := os.Getppid()
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "go" {
		return
	}
	// go run builds the program in a go-build directory under the
	// temporary directory.
	exe, err := os.Executable()
	if err != nil || !strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGTERM), 0, 0, 0); err != nil {
		return
	}
	// The go command may have exited before the signal was armed.
	if os.Getppid() != ppid {
		_ = unix.Kill(os.Getpid(), unix.SIGTERM)
	}
}
