package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dssio/dss/internal/auth"
	"github.com/dssio/dss/internal/dsstest"
)

// passwdOnTerminal runs dss passwd FILE NAME with standard input on a
// pseudo-terminal and types each of lines once the terminal stops
// echoing. It returns the exit status, standard error and everything
// the terminal showed.
func passwdOnTerminal(t *testing.T, file, name string, lines ...string) (code int, stderr, screen string) {
	t.Helper()
	ptm, tty := openTerminal(t)
	defer ptm.Close()
	defer tty.Close()
	shown := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(ptm) // ends when the terminal closes
		shown <- string(b)
	}()
	var errOut dsstest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(context.Background(), []string{"passwd", file, name}, Stdio{In: tty, Out: io.Discard, Err: &errOut})
	}()
	for i, line := range lines {
		// Each password is typed once its prompt is out and echo is off,
		// as a person would type it.
		dsstest.Eventually(t, "the prompt, without echo", func() bool {
			tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
			return err == nil && tio.Lflag&unix.ECHO == 0 && strings.Count(errOut.String(), ": ") > i
		})
		if _, err := ptm.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case code = <-done:
	case <-time.After(dsstest.Timeout):
		t.Fatal("dss passwd did not end")
	}
	tty.Close()
	ptm.Close()
	return code, errOut.String(), <-shown
}

func TestPasswdAsksTwiceOnATerminalWithoutEcho(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users")
	code, stderr, screen := passwdOnTerminal(t, file, "alice", "s3cret-pw", "s3cret-pw")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "Password for alice: ") || !strings.Contains(stderr, "Again: ") {
		t.Fatalf("the prompts: %q", stderr)
	}
	if strings.Contains(screen, "s3cret") {
		t.Fatalf("the password was echoed: %q", screen)
	}
	u, err := auth.LoadUsers(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Verify("alice", []byte("s3cret-pw")); err != nil {
		t.Fatalf("the password typed does not verify: %v", err)
	}

	code, stderr, _ = passwdOnTerminal(t, file, "alice", "one", "other")
	if code != ExitError || !strings.Contains(stderr, "do not match") {
		t.Fatalf("two different passwords: exit %d: %s", code, stderr)
	}
	if u, _ := auth.LoadUsers(file); u.Verify("alice", []byte("s3cret-pw")) != nil {
		t.Fatal("a refused change replaced the password")
	}
}
