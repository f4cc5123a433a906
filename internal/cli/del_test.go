package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/client"
)

func TestDelCmd(t *testing.T) {
	addr, c := startServer(t)
	res, err := c.Set(testCtx(t), "k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "del", "--server", addr, "--json", "k").expectCode(t, ExitOK)
	if want := `{"deleted":true,"encoding":"utf8","key":"k","mismatch":false,"version":"` + res.Version.String() + `"}` + "\n"; r.out != want {
		t.Fatalf("json %q, want %q", r.out, want)
	}
	if _, found, _ := c.Get(testCtx(t), "k"); found {
		t.Fatal("key still there")
	}
	r = runCLI(t, "", "del", "--server", addr, "k").expectCode(t, ExitFalse)
	if r.out != "" || r.err != "" {
		t.Fatalf("missing key: stdout %q stderr %q", r.out, r.err)
	}
}

func TestDelCmdFencing(t *testing.T) {
	addr, c := startServer(t)
	token := protectedKey(t, c, "res", "v")
	r := runCLI(t, "", "del", "--server", addr, "res").expectCode(t, ExitError)
	if !strings.Contains(r.err, "a fencing token is required for this request") {
		t.Fatalf("stderr %q", r.err)
	}
	runCLI(t, "", "del", "--server", addr, "--fencing-token", token, "res").expectCode(t, ExitOK)
}

// The life of a protected key, as docs/client.md tells it: written with a
// lock's token, refused without one, deleted with a newer token, then an
// ordinary key again; and an operator's token of the current time clears
// it too.
func TestProtectedKeyLifecycle(t *testing.T) {
	addr, c := startServer(t)
	lease, err := c.Lock(testCtx(t), "jobs/compactor", client.TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	first := lease.Token().String()
	runCLI(t, "", "set", "--server", addr, "--fencing-token", first, "jobs/state", "running").expectCode(t, ExitOK)
	r := runCLI(t, "", "set", "--server", addr, "jobs/state", "idle").expectCode(t, ExitError)
	if !strings.Contains(r.err, "a fencing token is required for this request") {
		t.Fatalf("plain set of a protected key: %q", r.err)
	}
	if err := lease.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	next, err := c.Lock(testCtx(t), "jobs/compactor", client.TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	runCLI(t, "", "del", "--server", addr, "--fencing-token", next.Token().String(), "jobs/state").expectCode(t, ExitOK)
	runCLI(t, "", "set", "--server", addr, "jobs/state", "idle").expectCode(t, ExitOK)

	// An operator's token: the current time in milliseconds, as
	// $(date +%s%3N):0:admin makes it.
	runCLI(t, "", "set", "--server", addr, "--fencing-token", next.Token().String(), "jobs/state", "again").expectCode(t, ExitOK)
	now := fmt.Sprintf("%d:0:admin", time.Now().UnixMilli())
	runCLI(t, "", "del", "--server", addr, "--fencing-token", now, "jobs/state").expectCode(t, ExitOK)
	runCLI(t, "", "set", "--server", addr, "jobs/state", "idle").expectCode(t, ExitOK)
}
