package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
)

func TestLockCmdRunsCommandWithToken(t *testing.T) {
	addr, c := startServer(t)
	w, err := c.Watch(testCtx(t), []string{"L"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(testCtx(t))

	r := runCLI(t, "from stdin", "lock", "--server", addr, "L", "--",
		"sh", "-c", `echo "token=$DSS_FENCING_TOKEN name=$DSS_LOCK_NAME server=$DSS_SERVER"; cat; echo oops >&2; exit 3`)
	r.expectCode(t, 3)

	taken := <-w.Events()
	if taken.Op != client.OpSet {
		t.Fatalf("first event %+v, want the lock's SET", taken)
	}
	want := "token=" + taken.Version.String() + " name=L server=" + addr + "\nfrom stdin"
	if r.out != want || r.err != "oops\n" {
		t.Fatalf("stdout %q stderr %q, want %q and the command's stderr", r.out, r.err, want)
	}
	if _, err := hlc.Parse(strings.TrimPrefix(strings.Fields(r.out)[0], "token=")); err != nil {
		t.Fatalf("token does not parse: %v", err)
	}
	if released := <-w.Events(); released.Op != client.OpDelete {
		t.Fatalf("event %+v, want the release", released)
	}
	runCLI(t, "", "lock", "--server", addr, "L", "--", "true").expectCode(t, ExitOK)
}

func TestLockCmdTryAndWait(t *testing.T) {
	addr, c := startServer(t)
	l, err := c.Lock(testCtx(t), "L", client.TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "lock", "--server", addr, "--try", "L", "--", "echo", "ran").expectCode(t, ExitFalse)
	if r.out != "" || !strings.Contains(r.err, "held by another holder") {
		t.Fatalf("stdout %q stderr %q", r.out, r.err)
	}
	r = runCLI(t, "", "lock", "--server", addr, "--wait", "50ms", "L", "--", "echo", "ran").expectCode(t, ExitFalse)
	if r.out != "" || !strings.Contains(r.err, "--wait") {
		t.Fatalf("stdout %q stderr %q", r.out, r.err)
	}
	// A waiting lock runs the command once the holder releases.
	waiting := startCLI(t, "lock", "--server", addr, "L", "--", "echo", "ran")
	if err := l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if code := waiting.wait(t); code != ExitOK || waiting.out.String() != "ran\n" {
		t.Fatalf("exit status %d, stdout %q stderr %q", code, waiting.out.String(), waiting.err.String())
	}
}

// TestLockCmdRenews runs a command for longer than the lock's TTL: the
// lock stays with it, renewed, until the command exits. The TTL leaves a
// loaded machine time for each renewal (one every third of it): with 2 s,
// a renewal held up for 1.3 s under the race detector on a busy machine
// let the lock expire.
func TestLockCmdRenews(t *testing.T) {
	const ttl = 6 * time.Second
	addr, c := startServer(t)
	flag := filepath.Join(t.TempDir(), "finish")
	w, err := c.Watch(testCtx(t), []string{"L"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop(testCtx(t))
	run := startCLI(t, "lock", "--server", addr, "--ttl", ttl.String(), "L", "--",
		"sh", "-c", `while [ ! -e "$0" ]; do sleep 0.02; done; echo done`, flag)
	// The acquisition, then renewals until the lock has been held for
	// longer than its TTL; a contender never gets it meanwhile.
	var acquired time.Time
	for i := 0; i < 3 || time.Since(acquired) <= ttl; i++ {
		if e := nextEvent(t, w); e.Op != client.OpSet {
			t.Fatalf("event %d: %+v, want a renewal", i, e)
		}
		if i == 0 {
			acquired = time.Now()
		}
		if _, held, err := c.TryLock(testCtx(t), "L"); err != nil || held {
			t.Fatalf("contender got the lock: %v %v", held, err)
		}
	}
	if _, held, err := c.TryLock(testCtx(t), "L"); err != nil || held {
		t.Fatalf("contender got the lock after its TTL: %v %v", held, err)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := run.wait(t); code != ExitOK || run.out.String() != "done\n" {
		t.Fatalf("exit status %d, stdout %q stderr %q", code, run.out.String(), run.err.String())
	}
	// Skip any renewal that raced with the exit; the release follows.
	for nextEvent(t, w).Op != client.OpDelete {
	}
}

// nextEvent returns w's next event, failing the test if none comes.
func nextEvent(t *testing.T, w *client.Watch) client.Event {
	t.Helper()
	select {
	case e, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended: %v", w.Err())
		}
		return e
	case <-time.After(dsstest.Timeout):
		t.Fatalf("no event within %v", dsstest.Timeout)
	}
	return client.Event{}
}

// TestLockCmdLost takes the lock away from the command: it is stopped and
// dss exits with status 2.
func TestLockCmdLost(t *testing.T) {
	addr, c := startServer(t)
	run := startCLI(t, "lock", "--server", addr, "--ttl", "300ms", "L", "--",
		"sh", "-c", `trap 'echo terminated; exit 9' TERM; echo started; while :; do sleep 0.02; done`)
	run.waitOutput(t, "started\n")
	if _, err := c.Set(testCtx(t), "L", []byte("usurper")); err != nil {
		t.Fatal(err)
	}
	if code := run.wait(t); code != ExitError {
		t.Fatalf("exit status %d, want %d; stderr %q", code, ExitError, run.err.String())
	}
	if !strings.Contains(run.out.String(), "terminated") || !strings.Contains(run.err.String(), "lease lost") {
		t.Fatalf("stdout %q stderr %q", run.out.String(), run.err.String())
	}
	if e, _, _ := c.Get(testCtx(t), "L"); string(e.Value) != "usurper" {
		t.Fatalf("the lost lock's release deleted the new holder's key: %q", e.Value)
	}
}

// TestLockCmdInterrupted interrupts dss: the command gets SIGTERM, and the
// lock is released.
func TestLockCmdInterrupted(t *testing.T) {
	addr, c := startServer(t)
	run := startCLI(t, "lock", "--server", addr, "L", "--", "sh", "-c", `echo started; while :; do sleep 0.02; done`)
	run.waitOutput(t, "started\n")
	if code := run.stop(t); code != 128+15 {
		t.Fatalf("exit status %d, want 143 (SIGTERM); stderr %q", code, run.err.String())
	}
	if _, found, _ := c.Get(testCtx(t), "L"); found {
		t.Fatal("lock not released")
	}
}

func TestLockCmdErrors(t *testing.T) {
	addr, c := startServer(t)
	r := runCLI(t, "", "lock", "--server", addr, "L", "--", "/nonexistent/command")
	r.expectCode(t, ExitError)
	if !strings.Contains(r.err, "/nonexistent/command") {
		t.Fatalf("stderr %q", r.err)
	}
	dsstest.Eventually(t, "the lock is released after the failed start", func() bool {
		_, found, err := c.Get(testCtx(t), "L")
		return err == nil && !found
	})
	runCLI(t, "", "lock", "--server", addr, "L").expectCode(t, ExitError)
	runCLI(t, "", "lock", "--server", addr, "--ttl", "0s", "L", "--", "true").expectCode(t, ExitError)
	runCLI(t, "", "lock", "--server", addr, "L", "M", "--", "true").expectCode(t, ExitError)
}
