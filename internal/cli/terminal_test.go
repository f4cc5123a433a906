package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/dssio/dss/internal/dsstest"
)

// openTerminal opens a pseudo-terminal, or skips the test where the
// system has none (Windows).
func openTerminal(t *testing.T) (ptm, tty *os.File) {
	t.Helper()
	ptm, tty, err := pty.Open()
	if errors.Is(err, pty.ErrUnsupported) {
		t.Skip("no pseudo-terminals on this system")
	}
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	return ptm, tty
}

// runOnTerminal runs dss with standard output on a pseudo-terminal and
// returns what the terminal showed and what went to standard error.
func runOnTerminal(t *testing.T, args ...string) (code int, screen, stderr string) {
	t.Helper()
	ptm, tty := openTerminal(t)
	defer ptm.Close()
	var errOut dsstest.Buffer
	code = Run(context.Background(), args, Stdio{In: strings.NewReader(""), Out: tty, Err: &errOut})
	tty.Close()
	// The terminal holds what was written; read it until it is empty.
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		_ = ptm.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := ptm.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return code, out.String(), errOut.String()
}

func TestGetOnTerminal(t *testing.T) {
	addr, c := startServer(t)
	for k, v := range map[string]string{"k": "value", "nl": "ends in a newline\n"} {
		if _, err := c.Set(testCtx(t), k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	// The terminal turns "\n" into "\r\n".
	code, screen, stderr := runOnTerminal(t, "get", "--server", addr, "k")
	if code != ExitOK || screen != "value\r\n" || stderr != "" {
		t.Fatalf("get k on a terminal: exit %d, screen %q, stderr %q; want the value and a newline", code, screen, stderr)
	}
	code, screen, _ = runOnTerminal(t, "get", "--server", addr, "nl")
	if code != ExitOK || screen != "ends in a newline\r\n" {
		t.Fatalf("get nl on a terminal: exit %d, screen %q; want no second newline", code, screen)
	}
	code, screen, stderr = runOnTerminal(t, "get", "--server", addr, "nope")
	if code != ExitFalse || screen != "" || stderr != "dss: no key \"nope\"\n" {
		t.Fatalf("get nope on a terminal: exit %d, screen %q, stderr %q", code, screen, stderr)
	}
	// Piped, the same commands stay byte-exact and quiet.
	if r := runCLI(t, "", "get", "--server", addr, "k").expectCode(t, ExitOK); r.out != "value" {
		t.Fatalf("get k into a pipe: %q", r.out)
	}
	if r := runCLI(t, "", "get", "--server", addr, "nope").expectCode(t, ExitFalse); r.out != "" || r.err != "" {
		t.Fatalf("get nope into a pipe: stdout %q stderr %q", r.out, r.err)
	}
}

func TestIsTerminal(t *testing.T) {
	ptm, tty := openTerminal(t)
	defer ptm.Close()
	defer tty.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if !isTerminal(tty) || isTerminal(w) || isTerminal(io.Discard) {
		t.Fatalf("isTerminal: tty %v, pipe %v, discard %v", isTerminal(tty), isTerminal(w), isTerminal(io.Discard))
	}
}

// On a terminal every exit status 1 says why on standard error; into a
// pipe the same commands print what they always did: nothing.
func TestConditionsNotMetSayWhyOnATerminal(t *testing.T) {
	addr, c := startServer(t)
	if _, err := c.Set(testCtx(t), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"set", "--nx", "k", "w"}, `dss: not set: key "k" exists` + "\n"},
		{[]string{"set", "--nex", "k", "w"}, `dss: not set: key "k" holds another value` + "\n"},
		{[]string{"del", "missing"}, `dss: no key "missing"` + "\n"},
		{[]string{"vdel", "k", "w"}, `dss: not deleted: key "k" holds another value` + "\n"},
		{[]string{"vdel", "missing", "w"}, `dss: no key "missing"` + "\n"},
		{[]string{"keys", "nothing*"}, `dss: no key matches "nothing*"` + "\n"},
		{[]string{"get", "--json", "missing"}, `dss: no key "missing"` + "\n"},
	} {
		args := append(tc.args, "--server", addr)
		code, _, stderr := runOnTerminal(t, args...)
		if code != ExitFalse || stderr != tc.want {
			t.Errorf("%v on a terminal: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
		r := runCLI(t, "", args...)
		if r.code != ExitFalse || r.err != "" {
			t.Errorf("%v into a pipe: exit %d, stderr %q; want 1 and nothing", tc.args, r.code, r.err)
		}
	}
}
