//go:build linux

package e2e_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// SIGTERM to `go run ./cmd/dss serve` stops the server too, gracefully,
// though go run does not pass the signal on.
func TestGoRunServeStopsWithGoRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds dss with go run")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// A file, not a pipe: Wait would wait for the pipe's last writer, the
	// server.
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command("go", "run", "./cmd/dss", "serve", "--in-memory", "--listen", "127.0.0.1:0")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	goDone := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(goDone)
	}()
	var server int
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-goDone
		if server != 0 {
			_ = syscall.Kill(server, syscall.SIGKILL)
		}
	})
	// The start-up line names the port the server was given.
	serving := regexp.MustCompile(`msg="dss serving" .*mqtt=(127\.0\.0\.1:\d+)`)
	var addr string
	dsstest.EventuallyWithin(t, 2*time.Minute, "dss serves (go run builds it first)", func() bool {
		log, _ := os.ReadFile(out.Name())
		if m := serving.FindSubmatch(log); m != nil {
			addr = string(m[1])
		}
		return addr != ""
	})
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dss serves on %s but does not accept: %v", addr, err)
	}
	c.Close()
	server = childOf(t, cmd.Process.Pid)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-goDone
	dsstest.EventuallyWithin(t, 30*time.Second, "the server exits after go run did", func() bool { return !alive(server) })
	if log, _ := os.ReadFile(out.Name()); !strings.Contains(string(log), "dss shutting down") {
		t.Fatalf("the server did not shut down gracefully:\n%s", log)
	}
}

// childOf returns the pid of the one child process of parent.
func childOf(t *testing.T, parent int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procStat(pid); ppid == parent {
			return pid
		}
	}
	t.Fatalf("no child of process %d", parent)
	return 0
}

// procStat returns the parent pid and state of pid from /proc.
func procStat(pid int) (ppid int, state string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid ...; comm may hold spaces.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(fields[1])
	return ppid, fields[0]
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	_, state := procStat(pid)
	return state != "" && state != "Z" && state != "X"
}
