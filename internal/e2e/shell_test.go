package e2e_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/dssio/dss/internal/dsstest"
)

// TestShellOnATerminal: dss alone on a terminal is the shell: commands
// run as on the command line, Up recalls the last one, ^C ends a running
// sub without ending the shell, Ctrl-D leaves it, and the history is kept.
func TestShellOnATerminal(t *testing.T) {
	p := startDSS(t, anyPort, "--in-memory")
	history := filepath.Join(t.TempDir(), "history")
	cmd := exec.Command(dssBinary)
	cmd.Env = append(os.Environ(), "DSS_SERVER="+p.addr, "DSS_HISTORY="+history, "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer tty.Close()
	var screen dsstest.Buffer
	go func() { _, _ = io.Copy(&screen, tty) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()
	prompts := func(n int) {
		t.Helper()
		dsstest.Eventually(t, "the prompt", func() bool { return strings.Count(screen.String(), "dss> ") >= n })
	}
	send := func(s string) {
		t.Helper()
		if _, err := tty.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	prompts(1)
	send("set greeting 'hello there'\r")
	prompts(2)
	send("get greeting\r")
	dsstest.Eventually(t, "the value", func() bool { return strings.Count(screen.String(), "hello there\r\n") >= 1 })
	send("\x1b[A\r") // Up: the last command again
	dsstest.Eventually(t, "the value again, after Up", func() bool { return strings.Count(screen.String(), "hello there\r\n") >= 2 })
	send("sub 'news/#'\r")
	// The sub runs once a message published meanwhile shows.
	dsstest.Eventually(t, "the sub to print a message", func() bool {
		if out, code := runDSS(t, "pub", "--server", p.addr, "news/today", "extra"); code != 0 {
			t.Fatalf("dss pub: %s", out)
		}
		return strings.Contains(screen.String(), "news/today extra")
	})
	send("\x03") // ^C: ends the sub only
	send("get nothing\r")
	dsstest.Eventually(t, "the shell to survive ^C and report a missing key", func() bool {
		return strings.Contains(screen.String(), `dss: no key "nothing"`)
	})
	send("\x04") // Ctrl-D
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the shell exited with %v:\n%s", err, screen.String())
		}
	case <-time.After(dsstest.Timeout):
		t.Fatalf("the shell did not exit on Ctrl-D:\n%s", screen.String())
	}
	b, err := os.ReadFile(history)
	if err != nil || !strings.Contains(string(b), "get greeting\n") || !strings.Contains(string(b), "sub 'news/#'\n") {
		t.Fatalf("history file: %q, %v", b, err)
	}
}
